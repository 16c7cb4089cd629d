//! The median: the one implementation every estimator and reader uses (Theil–Sen slopes and
//! intercepts, the calibration's median burst, the charts' fitted lines).

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    median_in_place(&mut values.to_vec())
}

/// The median of `values`, reordered in place to avoid a copy; `None` when empty.
pub fn median_in_place(values: &mut [f64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mid = n / 2;
    let (_, upper, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        return Some(upper);
    }
    let lower = values[..mid]
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .unwrap_or(upper);
    Some((lower + upper) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    proptest! {
        /// The median lies between the smallest and the largest value, whatever their order.
        #[test]
        fn the_median_lies_between_min_and_max_and_ignores_order(
            values in prop::collection::vec(-1e9f64..1e9, 1..60),
            seed in any::<u64>(),
        ) {
            let m = median(&values).unwrap();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(min <= m && m <= max);
            let mut shuffled = values.clone();
            // A seeded rotation and reversal: another order of the same values.
            let len = shuffled.len();
            shuffled.rotate_left((seed as usize) % len);
            if seed % 2 == 1 {
                shuffled.reverse();
            }
            prop_assert_eq!(median(&shuffled), Some(m));
        }

        /// Scaling every value by a positive factor scales the median by it.
        #[test]
        fn scaling_every_value_scales_the_median(
            values in prop::collection::vec(-1e6f64..1e6, 1..60),
            factor in 1e-3f64..1e3,
        ) {
            let m = median(&values).unwrap();
            let scaled: Vec<f64> = values.iter().map(|v| v * factor).collect();
            let s = median(&scaled).unwrap();
            prop_assert!((s - m * factor).abs() <= 1e-9 * (m.abs() * factor + 1.0), "{s} vs {}", m * factor);
        }
    }
}
