//! Shards: what `run --shard i/N` records about the slice of the schedule it sent, and the exact
//! merge of the shards' results that `cargo loadgate merge` judges.
//!
//! A shard sends the sessions k ≡ i (mod N) of every phase's seeded schedule
//! ([`crate::workload::Shard`]), starting at an agreed wall-clock instant. Its result carries full
//! HdrHistograms per phase, operation and window (V2+DEFLATE), so the merge is lossless: counts
//! summed, histograms added, windows merged by index (a window's index is its intended time from
//! the start of the phase's measured part), by the same code that merges the loops of one
//! generator ([`PhaseMerge`]). Before anything is merged, every shard is checked against the
//! others, and every problem is reported at once ([`ShardProblem`]).

use super::{PhaseRecord, RunResult};
use crate::measure::{PhaseMeasurement, PhaseMerge, ValidityLimits};
use crate::targets::ResourceSample;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Whether a result is one shard of a sharded run, or the merge of all of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ShardRecord {
    /// This run sent one shard of the schedule (`run --shard i/N`).
    Shard(ShardRun),
    /// This result merges the results of every shard (`cargo loadgate merge`).
    Merged(MergedShards),
}

/// What one shard sent and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardRun {
    /// This shard's number, from 0.
    pub index: usize,
    /// How many shards share the schedule.
    pub count: usize,
    /// The agreed start (`--start-at`), in milliseconds since the Unix epoch.
    pub start_at_unix_ms: u64,
    /// When this shard actually started its first phase, minus the agreed start, in milliseconds
    /// of this machine's wall clock (positive: late).
    pub start_offset_ms: f64,
    /// Whether this shard owns the target's resource samples: shard 0 does; the others' samples
    /// of the same target would be copies and are not taken by the merge.
    pub owns_target: bool,
    /// Every phase it ran, in order.
    pub phases: Vec<ShardPhase>,
}

/// One phase of a shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardPhase {
    /// The phase's name. Its record in `phases` holds the hash of the whole seeded schedule
    /// (`schedule_hash`, every shard's sessions: equal in every shard of one run).
    pub phase: String,
    /// sha256 of the sessions this shard sent ([`crate::workload::Schedule::hash`] of its shard).
    pub shard_schedule_hash: String,
    /// When the phase started, minus the agreed start, in milliseconds of this machine's clock.
    pub start_offset_ms: f64,
    /// The run's sampler clock (the resource samples' `elapsed_s`) when the phase's measured part
    /// began, in seconds.
    pub measured_from_s: f64,
    /// The sampler clock when the phase's arrivals ended, in seconds.
    pub measured_to_s: f64,
}

/// Which shards a merged result was made of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedShards {
    /// How many shards were merged (all of them).
    pub count: usize,
    /// The agreed start, in milliseconds since the Unix epoch.
    pub start_at_unix_ms: u64,
    /// The largest difference between two shards' start offsets in any phase, in milliseconds.
    pub skew_ms: f64,
    /// The shard whose resource samples the result holds.
    pub resources_from: usize,
    /// The shards, in order of their index.
    pub shards: Vec<MergedShard>,
}

/// One shard of a merged result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// Its number.
    pub index: usize,
    /// The result file it was read from, as given.
    pub path: PathBuf,
    /// Its start offset from the agreed start, in milliseconds.
    pub start_offset_ms: f64,
    /// Requests it sent in all phases' measured parts.
    pub requests: u64,
}

/// A reason the shards cannot be merged; `merge` names every one and exits 2.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ShardProblem {
    /// A result that is not a shard's.
    #[error("{} is not the result of a shard (it was not run with --shard i/N)", path.display())]
    NotAShard {
        /// The file.
        path: PathBuf,
    },
    /// A shard's run did not complete.
    #[error("{} did not complete (status `{status}`)", path.display())]
    Incomplete {
        /// The file.
        path: PathBuf,
        /// Its status.
        status: String,
    },
    /// Shards that disagree on the number of shards.
    #[error("{} is shard {index}/{count}, but {} is of {expected} shards", path.display(), first.display())]
    CountDiffers {
        /// The file.
        path: PathBuf,
        /// Its index.
        index: usize,
        /// Its count.
        count: usize,
        /// The first file's count.
        expected: usize,
        /// The first file.
        first: PathBuf,
    },
    /// Two results of the same shard.
    #[error("shard {index} is given twice: {} and {}", first.display(), second.display())]
    Duplicate {
        /// The shard.
        index: usize,
        /// One file.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// A shard no file holds.
    #[error("shard {index}/{count} is missing")]
    Missing {
        /// The shard.
        index: usize,
        /// Of how many.
        count: usize,
    },
    /// A different configuration.
    #[error("{} has config hash {}, but {} has {}", path.display(), short_hash(found), first.display(), short_hash(expected))]
    ConfigDiffers {
        /// The file.
        path: PathBuf,
        /// Its hash.
        found: String,
        /// The first file's.
        expected: String,
        /// The first file.
        first: PathBuf,
    },
    /// A different commit.
    #[error("{} measured commit {found}, but {} measured {expected}", path.display(), first.display())]
    CommitDiffers {
        /// The file.
        path: PathBuf,
        /// Its commit (`none` outside a repository).
        found: String,
        /// The first file's.
        expected: String,
        /// The first file.
        first: PathBuf,
    },
    /// Different phases.
    #[error("{} ran phases {found}, but {} ran {expected}", path.display(), first.display())]
    PhasesDiffer {
        /// The file.
        path: PathBuf,
        /// Its phases.
        found: String,
        /// The first file's.
        expected: String,
        /// The first file.
        first: PathBuf,
    },
    /// A phase on a different schedule.
    #[error("{} ran phase `{phase}` on schedule {}, but {} on {}", path.display(), short_hash(found), first.display(), short_hash(expected))]
    ScheduleDiffers {
        /// The file.
        path: PathBuf,
        /// The phase.
        phase: String,
        /// Its schedule hash.
        found: String,
        /// The first file's.
        expected: String,
        /// The first file.
        first: PathBuf,
    },
    /// Different agreed starts.
    #[error("{} was to start at {found} ms, but {} at {expected} ms (Unix)", path.display(), first.display())]
    StartDiffers {
        /// The file.
        path: PathBuf,
        /// Its agreed start.
        found: u64,
        /// The first file's.
        expected: u64,
        /// The first file.
        first: PathBuf,
    },
    /// Shards that started a phase too far apart.
    #[error(
        "phase `{phase}` started {skew_ms:.1} ms apart in shards {early} and {late}, more than the allowed skew of {allowed_ms:.1} ms"
    )]
    Skew {
        /// The phase.
        phase: String,
        /// The shard that started first.
        early: usize,
        /// The one that started last.
        late: usize,
        /// How far apart, in milliseconds.
        skew_ms: f64,
        /// The allowed skew, in milliseconds.
        allowed_ms: f64,
    },
}

fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// What merging the shards gives: the result's merged parts, for the caller to judge.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedRun {
    /// The phases, merged, in the shards' order.
    pub phases: Vec<PhaseRecord>,
    /// The shard that owns the target (shard 0), whose result gives the target, the environment
    /// and the resource samples.
    pub owner: usize,
    /// The owner's resource samples during each phase's measured part, by phase name.
    pub phase_resources: BTreeMap<String, Vec<ResourceSample>>,
    /// The record of the merge.
    pub record: MergedShards,
}

/// Checks that `shards` (each result with the path it was read from) are every shard of one run,
/// exactly once, with the same configuration, commit, phases and schedules and an agreed start,
/// and that they started each phase within `max_skew` of each other; then merges them. Every
/// problem found is returned, not only the first.
pub fn merge_shards(
    shards: &[(PathBuf, RunResult)],
    max_skew: Duration,
    limits: &ValidityLimits,
) -> Result<MergedRun, Vec<ShardProblem>> {
    let mut problems = Vec::new();
    let mut runs: Vec<(&PathBuf, &RunResult, &ShardRun)> = Vec::new();
    for (path, result) in shards {
        match &result.shards {
            Some(ShardRecord::Shard(run)) => runs.push((path, result, run)),
            _ => problems.push(ShardProblem::NotAShard { path: path.clone() }),
        }
        if result.status != super::RunStatus::Complete {
            problems.push(ShardProblem::Incomplete {
                path: path.clone(),
                status: serde_json::to_value(result.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            });
        }
    }
    let Some(&(first_path, first, first_run)) = runs.first() else {
        return Err(problems);
    };
    let count = first_run.count;
    let commit = |r: &RunResult| {
        r.git
            .as_ref()
            .map_or_else(|| "none".to_owned(), |g| g.commit.clone())
    };
    let names_of = |r: &RunResult| {
        r.phases
            .iter()
            .map(|p| p.measurement.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut by_index: BTreeMap<usize, (&PathBuf, &RunResult, &ShardRun)> = BTreeMap::new();
    for &(path, result, run) in &runs {
        if run.count != count {
            problems.push(ShardProblem::CountDiffers {
                path: path.clone(),
                index: run.index,
                count: run.count,
                expected: count,
                first: first_path.clone(),
            });
            continue;
        }
        if let Some(&(earlier, _, _)) = by_index.get(&run.index) {
            problems.push(ShardProblem::Duplicate {
                index: run.index,
                first: earlier.clone(),
                second: path.clone(),
            });
            continue;
        }
        by_index.insert(run.index, (path, result, run));
        if std::ptr::eq(result, first) {
            continue;
        }
        if result.config_hash != first.config_hash {
            problems.push(ShardProblem::ConfigDiffers {
                path: path.clone(),
                found: result.config_hash.clone(),
                expected: first.config_hash.clone(),
                first: first_path.clone(),
            });
        }
        if commit(result) != commit(first) {
            problems.push(ShardProblem::CommitDiffers {
                path: path.clone(),
                found: commit(result),
                expected: commit(first),
                first: first_path.clone(),
            });
        }
        if names_of(result) != names_of(first) {
            problems.push(ShardProblem::PhasesDiffer {
                path: path.clone(),
                found: names_of(result),
                expected: names_of(first),
                first: first_path.clone(),
            });
        } else {
            for (phase, expected) in result.phases.iter().zip(&first.phases) {
                if phase.schedule_hash != expected.schedule_hash {
                    problems.push(ShardProblem::ScheduleDiffers {
                        path: path.clone(),
                        phase: phase.measurement.name.clone(),
                        found: phase.schedule_hash.clone(),
                        expected: expected.schedule_hash.clone(),
                        first: first_path.clone(),
                    });
                }
            }
        }
        if run.start_at_unix_ms != first_run.start_at_unix_ms {
            problems.push(ShardProblem::StartDiffers {
                path: path.clone(),
                found: run.start_at_unix_ms,
                expected: first_run.start_at_unix_ms,
                first: first_path.clone(),
            });
        }
    }
    for index in 0..count {
        if !by_index.contains_key(&index) {
            problems.push(ShardProblem::Missing { index, count });
        }
    }
    let skew_ms = phase_skews(&by_index, max_skew, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    let ordered: Vec<(&PathBuf, &RunResult, &ShardRun)> = by_index.into_values().collect();
    let (_, owner_result, owner_run) = ordered[0];
    let mut phases = Vec::with_capacity(first.phases.len());
    for (i, record) in first.phases.iter().enumerate() {
        let parts: Vec<PhaseMeasurement> = ordered
            .iter()
            .map(|(_, r, _)| r.phases[i].measurement.clone())
            .collect();
        if let Some(measurement) = merge_phase(parts, limits) {
            phases.push(PhaseRecord {
                schedule_hash: record.schedule_hash.clone(),
                measurement,
            });
        }
    }
    let phase_resources = owner_run
        .phases
        .iter()
        .map(|p| {
            let samples = owner_result
                .resources
                .iter()
                .filter(|s| s.elapsed_s >= p.measured_from_s && s.elapsed_s <= p.measured_to_s)
                .cloned()
                .collect();
            (p.phase.clone(), samples)
        })
        .collect();
    let record = MergedShards {
        count,
        start_at_unix_ms: first_run.start_at_unix_ms,
        skew_ms,
        resources_from: owner_run.index,
        shards: ordered
            .iter()
            .map(|(path, result, run)| MergedShard {
                index: run.index,
                path: (*path).clone(),
                start_offset_ms: run.start_offset_ms,
                requests: result
                    .phases
                    .iter()
                    .map(|p| p.measurement.requests_total)
                    .sum(),
            })
            .collect(),
    };
    Ok(MergedRun {
        phases,
        owner: owner_run.index,
        phase_resources,
        record,
    })
}

/// The largest start skew of any phase across the shards, in milliseconds; a problem for each
/// phase whose shards started further apart than `max_skew`.
fn phase_skews(
    shards: &BTreeMap<usize, (&PathBuf, &RunResult, &ShardRun)>,
    max_skew: Duration,
    problems: &mut Vec<ShardProblem>,
) -> f64 {
    let allowed_ms = max_skew.as_secs_f64() * 1e3;
    let mut starts: BTreeMap<&str, Vec<(usize, f64)>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (index, (_, _, run)) in shards {
        for phase in &run.phases {
            let entry = starts.entry(phase.phase.as_str()).or_insert_with(|| {
                order.push(phase.phase.as_str());
                Vec::new()
            });
            entry.push((*index, phase.start_offset_ms));
        }
    }
    let mut largest: f64 = 0.0;
    for phase in order {
        let offsets = &starts[phase];
        let early = offsets.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        let late = offsets.iter().max_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(&(early, lo)), Some(&(late, hi))) = (early, late) {
            let skew_ms = hi - lo;
            largest = largest.max(skew_ms);
            if skew_ms > allowed_ms {
                problems.push(ShardProblem::Skew {
                    phase: phase.to_owned(),
                    early,
                    late,
                    skew_ms,
                    allowed_ms,
                });
            }
        }
    }
    largest
}

/// One phase merged from the shards' measurements of it, by the merge the loops of one
/// generator use ([`PhaseMerge::finish`]): histograms added, counters summed, windows merged by
/// index from their histograms, validity judged on the merged figures. `None` without parts.
pub fn merge_phase(
    parts: Vec<PhaseMeasurement>,
    limits: &ValidityLimits,
) -> Option<PhaseMeasurement> {
    let stopped = parts.iter().find_map(|p| p.stopped.clone());
    PhaseMerge::new(parts.len()).finish(parts, limits, stopped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{FinishInfo, LatencyHistogram, Outcome, PhaseRecorder};
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const MS: Duration = Duration::from_millis(1);

    const LIMITS: ValidityLimits = ValidityLimits {
        max_lag: Duration::from_millis(50),
        max_drop_rate: 0.01,
        slo_latency: Duration::from_millis(200),
    };

    /// One answer of a recorded run: its session, operation, intended time and latency.
    #[derive(Clone, Copy, Debug)]
    struct Answer {
        session: u64,
        op: usize,
        intended: Duration,
        latency: Duration,
    }

    /// `n` answers over 6 s of a phase (1 s of it warm-up), two operations, latencies log-normal
    /// around 2 ms with a slow tail: a recorded set, drawn once from `seed`.
    fn recorded(n: u64, seed: u64) -> Vec<Answer> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut answers: Vec<Answer> = (0..n)
            .map(|session| {
                let normal: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
                let tail = if rng.random::<f64>() < 0.02 {
                    20.0
                } else {
                    1.0
                };
                Answer {
                    session,
                    op: usize::from(rng.random::<bool>()),
                    intended: Duration::from_micros(rng.random_range(0..6_000_000)),
                    latency: Duration::from_secs_f64(0.002 * (0.5 * normal).exp() * tail),
                }
            })
            .collect();
        answers.sort_by_key(|a| a.intended);
        answers
    }

    /// What one generator records of `answers`, in the order of its events.
    fn measure(answers: &[Answer]) -> PhaseMeasurement {
        let mut r = PhaseRecorder::new(
            &["a".to_owned(), "b".to_owned()],
            1_000 * MS,
            LIMITS.slo_latency,
            Duration::from_secs(1),
        );
        // As a shard's phase keeps them (`PhaseSpec::keep_window_histograms`).
        r.keep_window_histograms();
        // (time, answered, index): sends at their intended time, answers after their latency.
        let mut events: Vec<(Duration, bool, usize)> = answers
            .iter()
            .enumerate()
            .flat_map(|(i, a)| [(a.intended, false, i), (a.intended + a.latency, true, i)])
            .collect();
        events.sort_by_key(|&(at, answered, i)| (at, answered, i));
        for (at, answered, i) in events {
            let a = answers[i];
            if answered {
                r.completed(a.op, a.intended, a.intended, at, &Outcome::Ok);
            } else {
                r.arrival(a.intended);
                r.sent(a.op, a.intended, at);
            }
        }
        r.finish(FinishInfo {
            name: "soak".into(),
            seed: 1,
            sessions_per_sec: 100.0,
            arrivals_end: 6_000 * MS,
            end: 6_500 * MS,
            max_lag: LIMITS.max_lag,
            max_drop_rate: LIMITS.max_drop_rate,
            generator_cpu: None,
            generator_core: None,
            stopped: None,
        })
    }

    /// The answers of shard `index` of `count`: its sessions by the one sharding rule.
    fn shard_of(answers: &[Answer], index: usize, count: usize) -> Vec<Answer> {
        let shard = crate::workload::Shard { index, count };
        answers
            .iter()
            .copied()
            .filter(|a| shard.owns(a.session))
            .collect()
    }

    /// A shard's result as it travels between jobs: written as JSON and read back.
    fn round_trip(m: &PhaseMeasurement) -> PhaseMeasurement {
        serde_json::from_str(&serde_json::to_string(m).unwrap()).unwrap()
    }

    fn exact_quantile(answers: &[Answer], q: f64) -> Duration {
        let mut measured: Vec<Duration> = answers
            .iter()
            .filter(|a| a.intended >= 1_000 * MS)
            .map(|a| a.latency)
            .collect();
        measured.sort();
        let rank = ((q * measured.len() as f64).ceil() as usize).clamp(1, measured.len());
        measured[rank - 1]
    }

    /// The goal of issue 18: the merged p50 and p99 are within the histogram's resolution of a
    /// single-process run's over the same answers. They are in fact equal: the shards'
    /// histograms, read back from JSON, add to the single run's, per operation and per window.
    #[test]
    fn merged_percentiles_are_the_single_runs_over_the_same_answers() {
        let answers = recorded(20_000, 18);
        let single = measure(&answers);
        let shards: Vec<PhaseMeasurement> = (0..4)
            .map(|i| round_trip(&measure(&shard_of(&answers, i, 4))))
            .collect();
        let merged = merge_phase(shards, &LIMITS).expect("four parts");
        let (total, whole) = (merged.total(), single.total());
        assert_eq!(total.latency.count(), whole.latency.count());
        for q in [0.5, 0.99] {
            let (m, s) = (total.latency.quantile(q), whole.latency.quantile(q));
            assert_eq!(m, s, "q{q}");
            // Both are the exact quantile of the answers to 3 significant digits (HdrHistogram).
            let exact = exact_quantile(&answers, q).as_secs_f64();
            let resolution = exact * 1e-3 + 1e-6;
            assert!(
                (m.as_secs_f64() - exact).abs() <= resolution,
                "q{q}: {m:?} vs {exact}"
            );
        }
        for (op, whole) in merged.operations.iter().zip(&single.operations) {
            assert_eq!(op.latency, whole.latency, "operation {}", op.name);
            assert_eq!(op.counters, whole.counters, "operation {}", op.name);
        }
        assert_eq!(merged.counters.arrivals, single.counters.arrivals);
        assert_eq!(merged.windows.windows.len(), single.windows.windows.len());
        for (m, s) in merged.windows.windows.iter().zip(&single.windows.windows) {
            assert_eq!(
                (m.start, m.sent, m.completed, m.p50, m.p99, m.max),
                (s.start, s.sent, s.completed, s.p50, s.p99, s.max)
            );
        }
        assert_eq!(merged.windows.histograms, single.windows.histograms);
    }

    /// The figures a merge must reproduce, whatever the grouping and the order.
    fn figures(m: &PhaseMeasurement) -> impl PartialEq + std::fmt::Debug + use<> {
        let latency: Vec<LatencyHistogram> =
            m.operations.iter().map(|o| o.latency.clone()).collect();
        let counters: Vec<_> = m.operations.iter().map(|o| o.counters.clone()).collect();
        let windows: Vec<_> = m
            .windows
            .windows
            .iter()
            .map(|w| {
                (
                    w.start,
                    w.sent,
                    w.completed,
                    w.errors,
                    w.p50,
                    w.p99,
                    w.max,
                    w.lag_p99,
                )
            })
            .collect();
        (
            latency,
            counters,
            m.counters.clone(),
            m.lag.clone(),
            windows,
            m.windows.histograms.clone(),
            m.requests_total,
            m.validity.is_valid(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Merging is associative and order-independent: (a + b) + c = a + (b + c) = c + a + b.
        #[test]
        fn merging_is_associative_and_order_independent(seed in 0u64..1_000, count in 3usize..6) {
            let answers = recorded(1_500, seed);
            let parts: Vec<PhaseMeasurement> =
                (0..count).map(|i| measure(&shard_of(&answers, i, count))).collect();
            let all = merge_phase(parts.clone(), &LIMITS).unwrap();
            let left = merge_phase(
                vec![merge_phase(parts[..2].to_vec(), &LIMITS).unwrap(), merge_phase(parts[2..].to_vec(), &LIMITS).unwrap()],
                &LIMITS,
            ).unwrap();
            let mut reversed = parts.clone();
            reversed.reverse();
            let backwards = merge_phase(reversed, &LIMITS).unwrap();
            let mut rotated = parts.clone();
            rotated.rotate_left(seed as usize % count);
            let rotated = merge_phase(rotated, &LIMITS).unwrap();
            prop_assert_eq!(figures(&left), figures(&all));
            prop_assert_eq!(figures(&backwards), figures(&all));
            prop_assert_eq!(figures(&rotated), figures(&all));
            prop_assert_eq!(figures(&all), figures(&measure(&answers)));
        }
    }

    fn shard_result(index: usize, count: usize, offset_ms: f64) -> (PathBuf, RunResult) {
        let mut r = crate::result::testing::before();
        r.status = crate::result::RunStatus::Complete;
        r.shards = Some(ShardRecord::Shard(ShardRun {
            index,
            count,
            start_at_unix_ms: 1_000,
            start_offset_ms: offset_ms,
            owns_target: index == 0,
            phases: r
                .phases
                .iter()
                .map(|p| ShardPhase {
                    phase: p.measurement.name.clone(),
                    shard_schedule_hash: format!("{index}"),
                    start_offset_ms: offset_ms,
                    measured_from_s: 0.0,
                    measured_to_s: 1e9,
                })
                .collect(),
        }));
        (PathBuf::from(format!("shard-{index}/result.json")), r)
    }

    #[test]
    fn every_shard_once_merges() {
        let shards: Vec<_> = (0..3).map(|i| shard_result(i, 3, i as f64)).collect();
        let merged = merge_shards(&shards, Duration::from_millis(250), &LIMITS).expect("merges");
        let one = &shards[0].1;
        assert_eq!(merged.phases.len(), one.phases.len());
        assert_eq!(
            merged.phases[0].measurement.requests_total,
            3 * one.phases[0].measurement.requests_total
        );
        assert_eq!(merged.owner, 0);
        assert_eq!(merged.record.skew_ms, 2.0);
        assert_eq!(merged.record.shards.len(), 3);
    }

    /// Bad input is reported all at once: each problem named, none hidden behind the first.
    #[test]
    fn every_problem_of_the_shards_is_named_at_once() {
        let mut shards: Vec<_> = vec![
            shard_result(0, 4, 0.0),
            shard_result(1, 4, 400.0),
            shard_result(1, 4, 0.0),
            shard_result(3, 5, 0.0),
        ];
        shards[2].0 = PathBuf::from("again/result.json");
        shards.push(shard_result(2, 4, 0.0));
        shards[4].1.config_hash = "f".repeat(64);
        shards[4].1.phases[0].schedule_hash = "e".repeat(64);
        let mut whole = crate::result::testing::before();
        whole.status = crate::result::RunStatus::Complete;
        shards.push((PathBuf::from("whole/result.json"), whole));
        let problems = merge_shards(&shards, Duration::from_millis(250), &LIMITS)
            .expect_err("refused")
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        let hashes = redact_hashes(&problems);
        insta::assert_snapshot!(hashes);
    }

    /// `text` with every run of exactly 12 hex digits (a shortened hash) as `<hash>`.
    fn redact_hashes(text: &str) -> String {
        let mut out = String::new();
        let mut run = String::new();
        for c in text.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_hexdigit() {
                run.push(c);
                continue;
            }
            if run.len() == 12 {
                out.push_str("<hash>");
            } else {
                out.push_str(&run);
            }
            run.clear();
            out.push(c);
        }
        out.pop();
        out
    }
}
