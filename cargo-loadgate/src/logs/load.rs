//! The production load (seed 000): count the sessions starting (or the requests of one
//! significant operation) per interval, drop the inactive intervals, and take the 99th percentile
//! of the rest by the normal distribution: **mean + z·σ**, z = 2.33 for 0.99 as the seed reads it
//! from the table (the exact quantile is 2.3263), the normal quantile for another.
//!
//! The pure core is [`production_load`]; [`read_load`] is its shell over the logs.

use super::error::LogError;
use super::parse::format_rfc3339;
use super::pipeline::{LOGS_FORMAT_VERSION, ScanOptions, default_key};
use super::reader::{ScanSummary, scan};
use super::routes::{Route, RouteTable};
use super::sessions::{Session, SessionKey, SessionSink, Sessionizer};
use crate::stats::normal_quantile;
use std::collections::BTreeMap;
use std::time::Duration;

/// The most intervals a log's span is counted over: a year of 10 s intervals (about 3 million)
/// fits, and the counts stay a few tens of megabytes.
pub const MAX_INTERVALS: u64 = 10_000_000;

/// The seed's z for the 99th percentile, read from a normal table.
pub const SEED_Z_99: f64 = 2.33;

/// The fewest events an interval needs to count as active when the threshold is proposed (seed
/// 000: "it is important that you have at least a count of 10 active users").
pub const MIN_ACTIVE_COUNT: f64 = 10.0;

/// The z of the one-sided `quantile`: the seed's 2.33 at 0.99, the normal quantile otherwise.
pub fn z_for(quantile: f64) -> f64 {
    if (quantile - 0.99).abs() < 1e-12 {
        SEED_Z_99
    } else {
        normal_quantile(quantile)
    }
}

/// The threshold proposed from the counts: half the 90th percentile of the per-interval counts
/// (so a night at a tenth of the day's level falls below it, and a steady day keeps every
/// interval), and at least [`MIN_ACTIVE_COUNT`].
pub fn proposed_threshold(counts: &[u64]) -> f64 {
    let mut sorted: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
    sorted.sort_by(f64::total_cmp);
    let p90 = crate::stats::sorted_quantile(&sorted, 0.9).unwrap_or(0.0);
    (p90 / 2.0).max(MIN_ACTIVE_COUNT)
}

/// The rule [`proposed_threshold`] applies, as the output states it.
pub const THRESHOLD_RULE: &str = "half the 90th percentile of the per-interval counts, at least 10";

/// Mean, σ and the production load of the active intervals of a log (`cargo loadgate load`); the
/// headroom check's production load is `compare::ProductionLoad`, the workload's rate.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IntervalLoad {
    /// Intervals counted (the log's span, empty ones included).
    pub intervals: usize,
    /// Intervals above the threshold.
    pub active: usize,
    /// The threshold: an interval is active when its count is above it.
    pub threshold: f64,
    /// The mean count of the active intervals.
    pub mean: f64,
    /// Their sample standard deviation (n − 1).
    pub sd: f64,
    /// The one-sided quantile asked for.
    pub quantile: f64,
    /// Its z.
    pub z: f64,
    /// `mean + z·sd`, per interval.
    pub load_per_interval: f64,
}

/// Seed 000's production load of `counts` (one per interval): the intervals above `threshold`,
/// their mean and sample σ, and `mean + z(quantile)·σ`. `None` when no interval is active.
pub fn production_load(counts: &[u64], threshold: f64, quantile: f64) -> Option<IntervalLoad> {
    let active: Vec<f64> = counts
        .iter()
        .map(|&c| c as f64)
        .filter(|&c| c > threshold)
        .collect();
    if active.is_empty() {
        return None;
    }
    let n = active.len() as f64;
    let mean = active.iter().sum::<f64>() / n;
    let sd = if active.len() > 1 {
        (active.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let z = z_for(quantile);
    Some(IntervalLoad {
        intervals: counts.len(),
        active: active.len(),
        threshold,
        mean,
        sd,
        quantile,
        z,
        load_per_interval: mean + z * sd,
    })
}

/// What to count.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The interval.
    pub interval: Duration,
    /// The threshold; proposed from the counts when `None`.
    pub active_above: Option<f64>,
    /// Count the requests of this operation instead of sessions starting.
    pub operation: Option<String>,
    /// The one-sided quantile (0.99).
    pub quantile: f64,
}

/// The busiest interval.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Busiest {
    /// Its start, RFC 3339 in UTC.
    pub start: String,
    /// Its count.
    pub count: u64,
}

/// Everything `load` found.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LoadReport {
    /// [`LOGS_FORMAT_VERSION`].
    pub format_version: u32,
    /// The read.
    pub scan: ScanSummary,
    /// What was counted: `sessions starting` or `requests of \`NAME\``.
    pub counted: String,
    /// The session key, when sessions were counted.
    pub session_key: Option<String>,
    /// The interval, in seconds.
    pub interval_s: f64,
    /// Whether the threshold was proposed rather than given.
    pub threshold_proposed: bool,
    /// How a proposed threshold is found ([`THRESHOLD_RULE`]).
    pub threshold_rule: String,
    /// Mean, σ and the load.
    pub load: IntervalLoad,
    /// The production load as a rate: per interval over the interval's seconds.
    pub sessions_per_sec: f64,
    /// The busiest interval.
    pub busiest: Busiest,
    /// The `[workload]` snippet with `sessions-per-sec`.
    pub workload_toml: String,
}

struct Starts<'a> {
    buckets: &'a mut BTreeMap<i64, u64>,
    interval_us: i64,
}

/// Every session counts where it starts, however the log's end cut it.
impl SessionSink for Starts<'_> {
    fn session(&mut self, s: &Session<'_>) {
        *self
            .buckets
            .entry(s.start_us.div_euclid(self.interval_us))
            .or_insert(0) += 1;
    }
}

/// Reads the logs and computes the production load. Sessions need no routes (every line is a
/// request of one operation); `--operation` needs them.
pub fn read_load(
    opts: &ScanOptions,
    routes: Vec<Route>,
    load: &LoadOptions,
) -> Result<LoadReport, LogError> {
    let interval_us = i64::try_from(load.interval.as_micros())
        .unwrap_or(i64::MAX)
        .max(1);
    let mut table = RouteTable::new(routes);
    let target = match &load.operation {
        Some(name) => Some(
            table
                .operations()
                .iter()
                .position(|o| o == name)
                .ok_or_else(|| LogError::UnknownOperation {
                    name: name.clone(),
                    known: table.operations().to_vec(),
                })?,
        ),
        None => None,
    };
    let gap_us = i64::try_from(opts.session_gap.as_micros()).unwrap_or(i64::MAX);
    let mut sessions = Sessionizer::new(1, gap_us);
    let mut buckets = BTreeMap::new();
    let mut key = opts.session_key.clone();
    let (mut with_key, mut lines) = (0u64, 0u64);
    let cookie_field = opts.json_fields.cookie.clone();
    let scan = scan(&opts.paths, opts.format, &opts.json_fields, |line| {
        lines += 1;
        if let Some(op) = target {
            if table.classify(line.method, line.path) == Some(op) {
                *buckets
                    .entry(line.time_us.div_euclid(interval_us))
                    .or_insert(0) += 1;
            }
            return;
        }
        let key = key.get_or_insert_with(|| default_key(line));
        if let Some(k) = key.value(line, &cookie_field) {
            with_key += 1;
            let mut sink = Starts {
                buckets: &mut buckets,
                interval_us,
            };
            sessions.push(&mut sink, k, 0, line.time_us, line.answer_us.unwrap_or(0));
        }
    })?;
    sessions.finish(&mut Starts {
        buckets: &mut buckets,
        interval_us,
    });
    if lines == 0 {
        return Err(LogError::Empty);
    }
    let counted = match &load.operation {
        Some(name) => format!("requests of `{name}`"),
        None => "sessions starting".to_owned(),
    };
    if target.is_none() && with_key == 0 {
        return Err(LogError::NoSessions {
            key: key.unwrap_or(SessionKey::Client).to_string(),
            with_key: 0,
            matched: lines,
        });
    }
    // Every interval of the log's span, the empty ones as 0: bounded, so a stray timestamp (a
    // 1970 line) cannot ask for billions of intervals.
    let first = scan.first_us.unwrap_or(0).div_euclid(interval_us);
    let last = scan.last_us.unwrap_or(0).div_euclid(interval_us);
    let span = u64::try_from(last.saturating_sub(first)).unwrap_or(u64::MAX);
    if span >= MAX_INTERVALS {
        return Err(LogError::SpanTooLong {
            intervals: span.saturating_add(1),
            interval: crate::config::format_duration(load.interval),
            max: MAX_INTERVALS,
        });
    }
    let counts: Vec<u64> = (first..=last)
        .map(|i| buckets.get(&i).copied().unwrap_or(0))
        .collect();
    let threshold = load
        .active_above
        .unwrap_or_else(|| proposed_threshold(&counts));
    let busiest_index = (0..counts.len())
        .max_by(|&a, &b| counts[a].cmp(&counts[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    let result = production_load(&counts, threshold, load.quantile).ok_or_else(|| {
        LogError::AllInactive {
            intervals: counts.len(),
            busiest: counts.get(busiest_index).copied().unwrap_or(0),
            threshold,
            what: counted.clone(),
        }
    })?;
    let interval_s = load.interval.as_secs_f64();
    let sessions_per_sec = result.load_per_interval / interval_s;
    let workload_toml = format!(
        "[workload]\n# production load: mean {:.2} + {:.2} × σ {:.2} = {:.2} {counted} per {} interval ({} active of {}), over {interval_s} s\nsessions-per-sec = {}\n",
        result.mean,
        result.z,
        result.sd,
        result.load_per_interval,
        crate::config::format_duration(load.interval),
        result.active,
        result.intervals,
        (sessions_per_sec * 1e4).round() / 1e4
    );
    Ok(LoadReport {
        format_version: LOGS_FORMAT_VERSION,
        counted,
        session_key: target
            .is_none()
            .then(|| key.map(|k| k.to_string()).unwrap_or_default()),
        interval_s,
        threshold_proposed: load.active_above.is_none(),
        threshold_rule: THRESHOLD_RULE.to_owned(),
        busiest: Busiest {
            start: format_rfc3339((first + busiest_index as i64) * interval_us),
            count: counts.get(busiest_index).copied().unwrap_or(0),
        },
        load: result,
        sessions_per_sec,
        workload_toml,
        scan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_worked_example() {
        // Seed 000: "lets say the mean is 8 and the standard deviation is 4, then … our 99th
        // percentile figure is 17.32".
        assert_eq!(8.0 + z_for(0.99) * 4.0, 17.32);
        // Counts with mean 8 and sample σ 4: 4, 8, 12 → Σ(x − 8)² = 32, / (3 − 1) = 16.
        let p = production_load(&[4, 8, 12], 0.0, 0.99).unwrap();
        assert_eq!((p.mean, p.sd), (8.0, 4.0));
        assert!((p.load_per_interval - 17.32).abs() < 1e-12, "{p:?}");
    }

    /// Issue 17: a day of sessions with a known shape, the nights excluded by the proposed
    /// threshold, gives the hand-computed mean + 2.33σ.
    #[test]
    fn a_daily_shape_gives_the_hand_computed_production_load() {
        use crate::logs::parse::format_clf_time;
        // Per hour: 20 sessions at night (0–6 h and 22–23 h), the day's 15 hours as below.
        let day = [
            300, 350, 400, 450, 500, 550, 600, 600, 550, 500, 450, 400, 350, 300, 300,
        ];
        let per_hour: Vec<u64> = (0..24)
            .map(|h| if (7..22).contains(&h) { day[h - 7] } else { 20 })
            .collect();
        let midnight: i64 = 1_764_720_000_000_000; // 2025-12-03T00:00:00Z
        let mut log = String::new();
        let mut user = 0;
        for (h, &n) in per_hour.iter().enumerate() {
            for i in 0..n {
                // Spread over the hour; each session is one request of its own user.
                let t = midnight + h as i64 * 3_600_000_000 + i as i64 * (3_600_000_000 / n as i64);
                log.push_str(&format!(
                    "10.0.0.1 - - [{}] \"GET / HTTP/1.1\" 200 5 \"-\" \"ua\" user=u{user}\n",
                    format_clf_time(t)
                ));
                user += 1;
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("day.log");
        std::fs::write(&path, log).unwrap();
        let opts = ScanOptions {
            paths: vec![path],
            format: None,
            json_fields: crate::logs::JsonFields::default(),
            session_key: None,
            session_gap: Duration::from_secs(60),
        };
        let load = LoadOptions {
            interval: Duration::from_secs(3600),
            active_above: None,
            operation: None,
            quantile: 0.99,
        };
        let r = read_load(&opts, vec![], &load).unwrap();
        // By hand: the 24 counts' 90th percentile is 550, so the threshold is 275 and the 9
        // night hours fall below it. The 15 day hours sum to 6600: mean 440; Σ(x − 440)² =
        // 161000, / 14 = 11500, σ = 107.238053; load = 440 + 2.33 × 107.238053 = 689.864663
        // sessions per hour = 0.191629 per second.
        assert_eq!(r.load.threshold, 275.0);
        assert_eq!((r.load.intervals, r.load.active), (24, 15));
        assert!((r.load.mean - 440.0).abs() < 1e-9);
        assert!((r.load.sd - 11_500f64.sqrt()).abs() < 1e-9);
        assert!(
            (r.load.load_per_interval - 689.864_663).abs() < 1e-6,
            "{:?}",
            r.load
        );
        assert!((r.sessions_per_sec - 0.191_629).abs() < 1e-6);
        assert!(
            r.workload_toml.contains("sessions-per-sec = 0.1916\n"),
            "{}",
            r.workload_toml
        );
        assert_eq!(r.busiest.count, 600);
        assert_eq!(r.busiest.start, "2025-12-03T13:00:00Z");
        assert!(r.threshold_proposed);
        // Above every hour: a clear error with the counts.
        let err = read_load(
            &opts,
            vec![],
            &LoadOptions {
                active_above: Some(600.0),
                ..load
            },
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "all 24 intervals are inactive: the busiest had 600 sessions starting, at or below the threshold of 600\nhint: lower the threshold with `--active-above N`, or use a shorter `--interval`"
        );
    }

    /// A stray timestamp far from the rest would ask for billions of intervals: refused with a
    /// hint instead of the memory they would take (review).
    #[test]
    fn a_span_of_too_many_intervals_is_refused() {
        use crate::logs::parse::format_clf_time;
        let line = |t: i64, user: u32| {
            format!(
                "10.0.0.1 - - [{}] \"GET / HTTP/1.1\" 200 5 \"-\" \"ua\" user=u{user}\n",
                format_clf_time(t)
            )
        };
        let now: i64 = 1_764_720_000_000_000; // 2025-12-03T00:00:00Z
        let log = line(0, 1) + &line(now, 2); // one line from 1970
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stray.log");
        std::fs::write(&path, log).unwrap();
        let opts = ScanOptions {
            paths: vec![path],
            format: None,
            json_fields: crate::logs::JsonFields::default(),
            session_key: None,
            session_gap: Duration::from_secs(60),
        };
        let load = LoadOptions {
            interval: Duration::from_secs(1),
            active_above: None,
            operation: None,
            quantile: 0.99,
        };
        let err = read_load(&opts, vec![], &load).unwrap_err();
        assert!(matches!(err, LogError::SpanTooLong { .. }), "{err}");
        assert!(
            err.to_string().contains("hint: give a longer `--interval`"),
            "{err}"
        );
    }

    #[test]
    fn other_quantiles_use_the_normal_quantile() {
        assert!((z_for(0.95) - 1.644_853_6).abs() < 1e-6);
        assert!((z_for(0.999) - 3.090_232_3).abs() < 1e-6);
    }

    #[test]
    fn inactive_intervals_are_dropped() {
        let p = production_load(&[0, 3, 100, 120, 110, 2], 10.0, 0.99).unwrap();
        assert_eq!((p.intervals, p.active), (6, 3));
        assert_eq!(p.mean, 110.0);
        assert!(production_load(&[0, 3, 2], 10.0, 0.99).is_none());
    }

    #[test]
    fn the_proposed_threshold_cuts_nights_and_keeps_a_steady_day() {
        // A day: 16 busy hours near 1000, 8 quiet ones near 100.
        let mut day: Vec<u64> = (0..16).map(|i| 950 + i * 7).collect();
        day.extend((0..8).map(|i| 90 + i * 3));
        let t = proposed_threshold(&day);
        assert!(t > 120.0 && t < 900.0, "{t}");
        let steady: Vec<u64> = (0..24).map(|i| 95 + i % 10).collect();
        let t = proposed_threshold(&steady);
        assert!(steady.iter().all(|&c| c as f64 > t), "{t}");
        assert_eq!(proposed_threshold(&[1, 2, 3]), MIN_ACTIVE_COUNT);
    }
}
