//! Change points in a series: where the distribution of the values changes.
//!
//! The statistic is E-divisive's (Matteson & James 2014, with exponent 1) at a single split: for a
//! split of the series into `x` (the first m values) and `y` (the other n),
//!
//! `Q = mn/(m+n) · (2·mean|x − y| − mean|x − x'| − mean|y − y'|)`,
//!
//! an energy distance that is 0 in expectation when both parts come from one distribution and
//! grows with any difference of location or spread. The best split maximizes it; its significance
//! is a seeded permutation test (the series shuffled, the best split searched again each time), so
//! a flat series reports a change at the stated rate `alpha` whatever its distribution. Several
//! changes are found by binary segmentation: each part is searched again.
//!
//! Each change found can be described ([`describe_changes`]): its size (the difference of the
//! medians of the segments it separates, with a bootstrap interval) and the indices it could lie
//! at (a residual bootstrap of the split, Hušková and Kirch 2008).
//!
//! Used by `compare/noise.rs` so runs on either side of a change are not pooled into one noise
//! figure, and by `compare/history.rs` for the history of a metric over commits.

use super::bootstrap::{block_bootstrap_sd, derive_seed};
use super::median::median;
use super::slope::{DEFAULT_CONFIDENCE, normal_quantile};
use rand::seq::SliceRandom;
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How change points are searched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePointOptions {
    /// The level of the permutation test: a split is a change when its p-value is at most this.
    pub alpha: f64,
    /// Permutations per test; the smallest p-value is 1 / (permutations + 1).
    pub permutations: usize,
    /// The fewest values on each side of a split (at least 2, so each side has a spread).
    pub min_segment: usize,
    /// The seed of the permutations.
    pub seed: u64,
}

impl Default for ChangePointOptions {
    fn default() -> Self {
        Self {
            alpha: 0.05,
            permutations: 199,
            min_segment: 2,
            seed: 0x6368_616e_6765,
        }
    }
}

/// A change found in a series.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    /// The index of the first value after the change: the parts are `[..index]` and `[index..]`.
    pub index: usize,
    /// The E-divisive statistic at the split.
    pub statistic: f64,
    /// The permutation p-value of the best split.
    pub p_value: f64,
}

/// The best split of `values` (through the distance matrix `d` and the order `idx`) and its
/// statistic, or `None` when the series is too short for two parts of `min_segment`.
///
/// The within-part sums are carried from one split to the next (adding a value to the left part
/// adds its distances to the values before it; taking it from the right part removes its
/// distances to the values after it), so a search costs O(n²) rather than O(n³): a permutation
/// test of 199 shuffles of a 60-commit history is about 0.7 million additions.
fn best_split(d: &[Vec<f64>], idx: &[usize], min_segment: usize) -> Option<(usize, f64)> {
    let n = idx.len();
    let min = min_segment.max(2);
    if n < 2 * min {
        return None;
    }
    // before[t]: the distances of value t to the values before it; after[t]: to those after it.
    let mut before = vec![0.0; n];
    let mut after = vec![0.0; n];
    for i in 0..n {
        for j in i + 1..n {
            let v = d[idx[i]][idx[j]];
            before[j] += v;
            after[i] += v;
        }
    }
    let total: f64 = after.iter().sum();
    // left(τ) = Σ_{i<j<τ} d, right(τ) = Σ_{τ≤i<j} d.
    let mut left: f64 = before[..min].iter().sum();
    let mut right: f64 = after[min..].iter().sum();
    let mut best: Option<(usize, f64)> = None;
    for tau in min..=n - min {
        if tau > min {
            left += before[tau - 1];
            right -= after[tau - 1];
        }
        let between = total - left - right;
        let (m, k) = (tau as f64, (n - tau) as f64);
        let q = m * k / (m + k)
            * (2.0 * between / (m * k)
                - left / (m * (m - 1.0) / 2.0)
                - right / (k * (k - 1.0) / 2.0));
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// The distance matrix |a − b| of `series`.
fn distances(series: &[f64]) -> Vec<Vec<f64>> {
    series
        .iter()
        .map(|a| series.iter().map(|b| (a - b).abs()).collect())
        .collect()
}

/// The single most likely change of `series`, when the permutation test finds it significant at
/// `options.alpha`; `None` for a series too short to split or without a significant change.
/// Non-finite values are not allowed (the result is `None`).
pub fn change_point(series: &[f64], options: &ChangePointOptions) -> Option<ChangePoint> {
    if series.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let d = distances(series);
    let mut idx: Vec<usize> = (0..series.len()).collect();
    let (index, statistic) = best_split(&d, &idx, options.min_segment)?;
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut as_large = 0usize;
    for _ in 0..options.permutations {
        idx.shuffle(&mut rng);
        if let Some((_, q)) = best_split(&d, &idx, options.min_segment)
            && q >= statistic
        {
            as_large += 1;
        }
    }
    let p_value = (as_large + 1) as f64 / (options.permutations + 1) as f64;
    (p_value <= options.alpha).then_some(ChangePoint {
        index,
        statistic,
        p_value,
    })
}

/// Every change of `series` by binary segmentation, in index order: a change is searched in the
/// whole series, then in each part, until no part has a significant one. Each part's test is
/// seeded from `options.seed` and the part's start, so the result is a function of the input.
pub fn change_points(series: &[f64], options: &ChangePointOptions) -> Vec<ChangePoint> {
    let mut found = Vec::new();
    let mut parts = vec![(0usize, series.len())];
    while let Some((start, end)) = parts.pop() {
        let part_options = ChangePointOptions {
            seed: options.seed ^ (start as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ..*options
        };
        if let Some(cp) = change_point(&series[start..end], &part_options) {
            let at = start + cp.index;
            found.push(ChangePoint { index: at, ..cp });
            parts.push((start, at));
            parts.push((at, end));
        }
    }
    found.sort_by_key(|c| c.index);
    found
}

/// How many values at the start of `series` lie before its first change: the whole series when it
/// has none. Series are ordered nearest first, so this is the segment nearest its start.
pub fn first_segment_len(series: &[f64], options: &ChangePointOptions) -> usize {
    change_points(series, options)
        .first()
        .map_or(series.len(), |c| c.index)
}

/// How a change's size and location are given intervals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangeIntervalOptions {
    /// The two-sided confidence of both intervals.
    pub confidence: f64,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// The seed of the bootstraps.
    pub seed: u64,
}

impl Default for ChangeIntervalOptions {
    fn default() -> Self {
        Self {
            confidence: DEFAULT_CONFIDENCE,
            resamples: 1_000,
            seed: 0x7369_7a65,
        }
    }
}

/// A change point with its size and where it could lie.
///
/// The values are on the caller's test scale (ln of a latency or a capacity, the error rate as
/// it is): `shift` is the difference of the medians of the segments on either side, which for a
/// ln series is ln(ratio of the medians).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangeEstimate {
    /// The change as [`change_points`] found it.
    pub change: ChangePoint,
    /// median(after) − median(before), over the segments between the neighbouring changes.
    pub shift: f64,
    /// The lower end of the shift's interval.
    pub shift_low: f64,
    /// The upper end of the shift's interval.
    pub shift_high: f64,
    /// The earliest index the change could be at (the first value after it), from the
    /// location bootstrap.
    pub location_low: usize,
    /// The latest such index.
    pub location_high: usize,
    /// The two-sided confidence of both intervals.
    pub confidence: f64,
}

/// Every change of `series` ([`change_points`]) with its size and its location, each with an
/// interval at `intervals.confidence`.
///
/// The *size* is the difference of the medians of the two segments the change separates (each
/// bounded by the neighbouring changes or the ends of the series). Its interval is a normal
/// interval whose standard error is √(se_before² + se_after²), each the bootstrap standard error
/// of its segment's median ([`block_bootstrap_sd`] with blocks of one value: stored runs of
/// different commits are independent), as the comparison's intervals are drawn.
///
/// The *location* interval is a residual bootstrap of the split (Hušková and Kirch 2008,
/// "Bootstrapping confidence intervals for the change-point of time series"): within the two
/// segments, each value is its segment's median plus a residual drawn with replacement from all
/// the segments' residuals; the best split of each resample is searched again, and the interval
/// is the central `confidence` share of the splits found. With iid noise their block length is
/// one value.
pub fn describe_changes(
    series: &[f64],
    options: &ChangePointOptions,
    intervals: &ChangeIntervalOptions,
) -> Vec<ChangeEstimate> {
    let changes = change_points(series, options);
    let z = normal_quantile(0.5 + intervals.confidence / 2.0);
    let mut out = Vec::with_capacity(changes.len());
    for (k, change) in changes.iter().enumerate() {
        let start = if k == 0 { 0 } else { changes[k - 1].index };
        let end = changes.get(k + 1).map_or(series.len(), |c| c.index);
        let (before, after) = (&series[start..change.index], &series[change.index..end]);
        let (Some(m_before), Some(m_after)) = (median(before), median(after)) else {
            continue;
        };
        let seed = derive_seed(intervals.seed, &format!("change/{}", change.index));
        let se = |part: &[f64], label: &str| {
            block_bootstrap_sd(
                part,
                1,
                intervals.resamples,
                derive_seed(seed, label),
                median,
            )
            .unwrap_or(0.0)
        };
        let se = se(before, "before").hypot(se(after, "after"));
        let shift = m_after - m_before;
        let (location_low, location_high) = location_interval(
            &series[start..end],
            change.index - start,
            (m_before, m_after),
            options.min_segment,
            intervals,
            derive_seed(seed, "location"),
        );
        out.push(ChangeEstimate {
            change: *change,
            shift,
            shift_low: shift - z * se,
            shift_high: shift + z * se,
            location_low: start + location_low,
            location_high: start + location_high,
            confidence: intervals.confidence,
        });
    }
    out
}

/// The residual bootstrap of the split at `split` of `window` (whose two parts have the medians
/// `levels`): the central `intervals.confidence` share of the best splits of the resamples, as
/// indices into `window`. The split itself is always inside the interval.
fn location_interval(
    window: &[f64],
    split: usize,
    levels: (f64, f64),
    min_segment: usize,
    intervals: &ChangeIntervalOptions,
    seed: u64,
) -> (usize, usize) {
    let level = |i: usize| if i < split { levels.0 } else { levels.1 };
    let residuals: Vec<f64> = window
        .iter()
        .enumerate()
        .map(|(i, v)| v - level(i))
        .collect();
    let n = window.len();
    let idx: Vec<usize> = (0..n).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut splits = Vec::with_capacity(intervals.resamples);
    let mut resample = vec![0.0; n];
    for _ in 0..intervals.resamples {
        for (i, r) in resample.iter_mut().enumerate() {
            *r = level(i) + residuals[rng.random_range(0..n)];
        }
        if let Some((tau, _)) = best_split(&distances(&resample), &idx, min_segment) {
            splits.push(tau);
        }
    }
    if splits.is_empty() {
        return (split, split);
    }
    splits.sort_unstable();
    let tail = (1.0 - intervals.confidence) / 2.0;
    let at =
        |q: f64| splits[((q * (splits.len() - 1) as f64).round() as usize).min(splits.len() - 1)];
    (at(tail).min(split), at(1.0 - tail).max(split))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    fn series(seed: u64, n: usize, step_at: Option<usize>, step: f64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|i| {
                let shift = if step_at.is_some_and(|s| i >= s) {
                    step
                } else {
                    0.0
                };
                0.05 * normal(&mut rng) + shift
            })
            .collect()
    }

    #[test]
    fn a_step_is_found_where_it_is() {
        // A level step of 4 SDs after 8 of 20 runs. Each part is searched again at α, so a part
        // may split once more by chance: the segment nearest the start is at most the step.
        let mut exact = 0;
        for seed in 0..20 {
            let s = series(seed, 20, Some(8), 0.2);
            let cp = change_point(&s, &ChangePointOptions::default())
                .unwrap_or_else(|| panic!("seed {seed}: no change in {s:?}"));
            assert!((7..=9).contains(&cp.index), "seed {seed}: {cp:?}");
            assert!(cp.p_value <= 0.05);
            let first = first_segment_len(&s, &ChangePointOptions::default());
            assert!(first <= cp.index, "seed {seed}: {first}");
            exact += usize::from(first == cp.index);
        }
        assert!(exact >= 15, "{exact} of 20");
    }

    #[test]
    fn a_flat_series_reports_a_change_at_the_stated_rate() {
        // 200 flat series of 12 at α = 0.05: about 10 false changes are expected; a binomial
        // count of 200 at 5% exceeds 19 with probability below 0.3%.
        let options = ChangePointOptions {
            permutations: 99,
            ..ChangePointOptions::default()
        };
        let false_changes = (0..200)
            .filter(|&seed| change_point(&series(1000 + seed, 12, None, 0.0), &options).is_some())
            .count();
        assert!(false_changes <= 19, "{false_changes} of 200");
        // And it is a test, not a constant: the rate is not far below α either.
        assert!(false_changes >= 3, "{false_changes} of 200");
    }

    #[test]
    fn binary_segmentation_finds_two_steps_and_short_series_have_none() {
        let mut s = series(3, 10, None, 0.0);
        s.extend(series(4, 10, None, 0.0).iter().map(|v| v + 0.3));
        s.extend(series(5, 10, None, 0.0).iter().map(|v| v - 0.3));
        let found: Vec<usize> = change_points(&s, &ChangePointOptions::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(found, [10, 20]);
        assert_eq!(first_segment_len(&s, &ChangePointOptions::default()), 10);
        assert_eq!(
            change_point(&[1.0, 2.0, 3.0], &ChangePointOptions::default()),
            None
        );
        assert_eq!(
            first_segment_len(&[1.0, 5.0, 9.0], &ChangePointOptions::default()),
            3
        );
        assert_eq!(
            change_point(
                &[1.0, f64::NAN, 0.0, 1.0, 2.0],
                &ChangePointOptions::default()
            ),
            None
        );
    }

    #[test]
    fn the_test_is_seeded() {
        let s = series(9, 16, Some(8), 0.08);
        let o = ChangePointOptions::default();
        assert_eq!(change_point(&s, &o), change_point(&s, &o));
    }

    /// The O(n²) search gives the statistic of the direct formula at every split.
    #[test]
    fn the_carried_sums_agree_with_the_direct_statistic() {
        let s = series(21, 17, Some(6), 0.1);
        let d = distances(&s);
        let idx: Vec<usize> = (0..s.len()).collect();
        let direct = |tau: usize| {
            let (x, y) = (&s[..tau], &s[tau..]);
            let mean = |a: &[f64], b: &[f64], same: bool| {
                let mut sum = 0.0;
                let mut count = 0.0;
                for (i, u) in a.iter().enumerate() {
                    for (j, v) in b.iter().enumerate() {
                        if !same || i < j {
                            sum += (u - v).abs();
                            count += 1.0;
                        }
                    }
                }
                sum / count
            };
            let (m, k) = (x.len() as f64, y.len() as f64);
            m * k / (m + k) * (2.0 * mean(x, y, false) - mean(x, x, true) - mean(y, y, true))
        };
        let best = (2..=s.len() - 2)
            .map(|t| (t, direct(t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let (tau, q) = best_split(&d, &idx, 2).unwrap();
        assert_eq!(tau, best.0);
        assert!((q - best.1).abs() < 1e-9, "{q} {}", best.1);
    }

    #[test]
    fn a_change_is_described_by_its_size_and_where_it_could_lie() {
        // A step of +0.2 (4 SDs) after 12 of 30 values: the size's interval holds it, and the
        // location interval holds the true index.
        let mut covered = 0;
        for seed in 0..20 {
            let s = series(500 + seed, 30, Some(12), 0.2);
            let found = describe_changes(
                &s,
                &ChangePointOptions::default(),
                &ChangeIntervalOptions::default(),
            );
            let c = found
                .iter()
                .find(|c| (10..=14).contains(&c.change.index))
                .unwrap_or_else(|| panic!("seed {seed}: {found:?}"));
            assert!(c.shift_low <= c.shift && c.shift <= c.shift_high, "{c:?}");
            assert!(
                c.location_low <= c.change.index && c.change.index <= c.location_high,
                "{c:?}"
            );
            assert!(c.location_high - c.location_low <= 6, "seed {seed}: {c:?}");
            covered += usize::from(c.shift_low <= 0.2 && 0.2 <= c.shift_high);
            assert_eq!(c.confidence, 0.95);
        }
        // A 95% interval: about 19 of 20; 16 or more of 20 has probability above 98%.
        assert!(covered >= 16, "{covered} of 20");
        // A step 40 SDs tall cannot lie anywhere else.
        let s = series(7, 20, Some(9), 2.0);
        let c = describe_changes(
            &s,
            &ChangePointOptions::default(),
            &ChangeIntervalOptions::default(),
        );
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].location_low, c[0].location_high), (9, 9));
        assert!((c[0].shift - 2.0).abs() < 0.1, "{c:?}");
        // A flat series has nothing to describe, and the description is seeded.
        let flat = series(8, 20, None, 0.0);
        let o = (
            ChangePointOptions::default(),
            ChangeIntervalOptions::default(),
        );
        assert_eq!(
            describe_changes(&s, &o.0, &o.1),
            describe_changes(&s, &o.0, &o.1)
        );
        assert!(describe_changes(&flat, &o.0, &o.1).is_empty());
    }
}
