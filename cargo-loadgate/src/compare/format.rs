//! The comparison's figures for people: a metric's name, a change on its scale and its threshold.
//! Used by the verdict's rule and by every reporter, so they all say the same thing.

use crate::result::{Metric, MetricComparison, Scale};

/// The metric's name with its operation, e.g. ``p99 of `login` ``.
pub fn metric_name(m: &MetricComparison) -> String {
    metric_label(m.metric, m.operation.as_deref())
}

/// The name of `metric` of `operation` (`None`: all operations), e.g. ``p99 of `login` ``.
pub fn metric_label(metric: Metric, operation: Option<&str>) -> String {
    match operation {
        Some(op) => format!("{} of `{op}`", metric.label()),
        None if matches!(metric, Metric::P50 | Metric::P99) => {
            format!("{} (all operations)", metric.label())
        }
        None => metric.label().to_owned(),
    }
}

/// A figure on the metric's scale for people: a signed percent change for ratios, percentage
/// points for the error rate, MiB/min for the RSS slope.
pub fn format_change(m: &MetricComparison, value: Option<f64>) -> String {
    let Some(v) = value else {
        return if m.scale == Scale::Ratio && value.is_none() {
            "unbounded".to_owned()
        } else {
            "?".to_owned()
        };
    };
    change_phrase(m.metric, v)
}

/// A change of `metric` on its scale for people (a ratio for latency and capacity, a difference
/// otherwise): `+18.0%`, `+0.50 pp`, `+1.00 MiB/min`.
pub fn change_phrase(metric: Metric, v: f64) -> String {
    match metric {
        Metric::ErrorRate => format!("{:+.2} pp", v * 100.0),
        Metric::RssSlope => format!("{:+.2} MiB/min", v * 60.0 / (1024.0 * 1024.0)),
        _ => format!("{:+.1}%", (v - 1.0) * 100.0),
    }
}

/// The metric's threshold on its own scale, for people: `+10.0%`, `0.50 pp`, `2.00 MiB/min`.
pub fn format_threshold(m: &MetricComparison) -> String {
    match m.metric {
        Metric::ErrorRate => format!("{:.2} pp", m.threshold * 100.0),
        Metric::RssSlope => format!("{:.2} MiB/min", m.threshold * 60.0 / (1024.0 * 1024.0)),
        _ => format!("{:+.1}%", (m.threshold - 1.0) * 100.0),
    }
}

/// The metric's change, interval, confidence and threshold in one phrase, for the verdict's rule.
/// A threshold an accept replaced is named as the accepted amount, with where it was written.
pub(super) fn describe(m: &MetricComparison) -> String {
    format!(
        "{} changed {} (interval {} to {} at {:.2}% confidence) against {}",
        metric_name(m),
        format_change(m, m.estimate),
        format_change(m, m.low),
        format_change(m, m.high),
        m.confidence * 100.0,
        threshold_phrase(m)
    )
}

/// "a threshold of +5.0%", or for a metric an accept covers "the accepted +30.0% (Loadgate-Accept:
/// p50 +30% in 3f2a91c)": what a change was judged against, for every reporter.
pub fn threshold_phrase(m: &MetricComparison) -> String {
    match &m.accepted {
        Some(a) if !a.all => format!(
            "the accepted {} ({})",
            format_threshold(m),
            a.sources.join("; ")
        ),
        _ => format!("a threshold of {}", format_threshold(m)),
    }
}
