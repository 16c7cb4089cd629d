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
//! Used by `compare/noise.rs` so runs on either side of a change are not pooled into one noise
//! figure, and meant for the history of a metric over commits.

use rand::SeedableRng;
use rand::seq::SliceRandom;
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
fn best_split(d: &[Vec<f64>], idx: &[usize], min_segment: usize) -> Option<(usize, f64)> {
    let n = idx.len();
    let min = min_segment.max(2);
    if n < 2 * min {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for tau in min..=n - min {
        let (m, k) = (tau as f64, (n - tau) as f64);
        let (mut between, mut left, mut right) = (0.0, 0.0, 0.0);
        for i in 0..n {
            for j in i + 1..n {
                let v = d[idx[i]][idx[j]];
                match (i < tau, j < tau) {
                    (true, true) => left += v,
                    (false, false) => right += v,
                    _ => between += v,
                }
            }
        }
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

/// The single most likely change of `series`, when the permutation test finds it significant at
/// `options.alpha`; `None` for a series too short to split or without a significant change.
/// Non-finite values are not allowed (the result is `None`).
pub fn change_point(series: &[f64], options: &ChangePointOptions) -> Option<ChangePoint> {
    if series.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let d: Vec<Vec<f64>> = series
        .iter()
        .map(|a| series.iter().map(|b| (a - b).abs()).collect())
        .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

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
}
