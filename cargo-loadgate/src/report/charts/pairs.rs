//! `pairs.svg`: a paired run's per-pair ratios head / base (issue 13), the p50 and the p99 of
//! each pair the comparison uses, with the line of no change, the p50 threshold and the
//! Hodges–Lehmann estimates the comparison drew from them.

use super::draw::{
    FIT_COLOR, FONT, INK, LEGEND_WIDTH, LegendRow, Marker, SERIES_COLOR, SLO_COLOR, WIDTH,
    axis_number, draw_legend, draw_markers, heading, render,
};
use super::{ChartError, PAIRS_CHART};
use crate::result::{Metric, MetricComparison, RunResult};
use plotters::prelude::*;

/// The colour of the p99 ratios and their estimate (the p50's is [`SERIES_COLOR`]).
pub(super) const P99_COLOR: RGBColor = RGBColor(255, 127, 14);

/// Renders `pairs.svg`: one point per pair the comparison uses for its p50 ratio head / base and
/// one for its p99 ratio (x the pair, y the ratio), a line at 1 (no change), one at the p50
/// threshold, and the Hodges–Lehmann estimates of the comparison's overall p50 and p99. `None`
/// for a run that is not paired, or whose used pairs have no ratio.
pub fn render_pairs(head: &RunResult) -> Result<Option<String>, ChartError> {
    let Some(record) = &head.paired else {
        return Ok(None);
    };
    let used: Vec<_> = record.used_pairs().collect();
    // The p50 point a little left of its pair and the p99 a little right, so that equal ratios
    // do not hide one another.
    let points = |ratio: fn(&crate::result::PairRecord) -> Option<f64>, shift: f64| {
        used.iter()
            .filter_map(|p| Some((p.pair as f64 + shift, ratio(p).filter(|r| r.is_finite())?)))
            .collect::<Vec<(f64, f64)>>()
    };
    let p50 = points(|p| p.p50_ratio, -0.1);
    let p99 = points(|p| p.p99_ratio, 0.1);
    if p50.is_empty() && p99.is_empty() {
        return Ok(None);
    }
    let overall = |metric: Metric| -> Option<&MetricComparison> {
        head.comparison.as_ref().and_then(|c| {
            c.metrics
                .iter()
                .find(|m| m.metric == metric && m.operation.is_none())
        })
    };
    let (p50_metric, p99_metric) = (overall(Metric::P50), overall(Metric::P99));
    let threshold = p50_metric.map(|m| m.threshold).filter(|t| t.is_finite());
    let estimate =
        |m: Option<&MetricComparison>| m.and_then(|m| m.estimate).filter(|e| e.is_finite());
    let (p50_estimate, p99_estimate) = (estimate(p50_metric), estimate(p99_metric));

    let base = match &record.base.commit {
        Some(commit) => format!("base {} ", &commit[..commit.len().min(12)]),
        None => "base ".to_owned(),
    };
    let mut subtitle = vec![
        format!(
            "Decided by paired blocks: {base}({}), {} of {} pair(s) used, order {}.",
            record.base.source.describe(),
            used.len(),
            record.pairs.len(),
            record.design.order
        ),
        format!(
            "Blocks at {} sessions/s = {:.0}% of the base's capacity. Each point: the head's block \
             over the base's, in one pair.",
            crate::plan::format_rate(record.design.sessions_per_sec),
            record.design.at * 100.0
        ),
    ];
    let left_out = record.pairs.len() - used.len();
    if left_out > 0 {
        subtitle.push(format!(
            "{left_out} pair(s) left out (a block's schedule not kept, or a block missing): \
             not drawn."
        ));
    }
    let x_max = record.pairs.iter().map(|p| p.pair).max().unwrap_or(0) as f64;
    let x = -0.5..x_max + 0.5;
    let ys = p50.iter().chain(&p99).map(|p| p.1).chain(
        [Some(1.0), threshold, p50_estimate, p99_estimate]
            .into_iter()
            .flatten(),
    );
    let (low, high) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), y| {
        (l.min(y), h.max(y))
    });
    let pad = ((high - low) * 0.12).max(0.02);
    let y = (low - pad).max(0.0)..high + pad;
    let pair_labels = record.pairs.len().clamp(1, 20);
    let height = 560 + 18 * (subtitle.len() as u32 - 1);
    let percent = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);

    let svg = render(PAIRS_CHART, (WIDTH, height), |root| {
        let area = heading(root, "Per-pair ratios, head / base", &subtitle)?;
        let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .margin_right(20)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x.clone(), y.clone())?;
        chart
            .configure_mesh()
            .x_desc("pair")
            .y_desc("ratio head / base")
            .x_labels(pair_labels)
            .x_label_formatter(&|v: &f64| {
                if (v - v.round()).abs() < 1e-9 && *v >= 0.0 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&axis_number)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 14))
            .max_light_lines(2)
            .light_line_style(RGBColor(0, 0, 0).mix(0.04))
            .draw()?;
        let across = |y: f64| vec![(x.start, y), (x.end, y)];
        chart.draw_series(LineSeries::new(across(1.0), INK.stroke_width(1)))?;
        let mut rows = vec![
            LegendRow::heading("per pair"),
            LegendRow::marker("p50 ratio", Marker::Circle, SERIES_COLOR, true),
            LegendRow::marker("p99 ratio", Marker::Triangle, P99_COLOR, true),
            LegendRow::heading("lines"),
            LegendRow::line("1: no change", INK, 1, false),
        ];
        if let Some(t) = threshold {
            chart.draw_series(DashedLineSeries::new(
                across(t),
                8,
                5,
                SLO_COLOR.stroke_width(2),
            ))?;
            rows.push(LegendRow::line(
                format!("p50 threshold {}", percent(t)),
                SLO_COLOR,
                2,
                true,
            ));
        }
        if let Some(e) = p50_estimate {
            chart.draw_series(LineSeries::new(across(e), FIT_COLOR.stroke_width(3)))?;
            rows.push(LegendRow::line(
                format!("p50 Hodges–Lehmann {}", percent(e)),
                FIT_COLOR,
                3,
                false,
            ));
            if let Some((l, h)) = p50_metric.and_then(|m| Some((m.low?, m.high?))) {
                rows.push(LegendRow::note(format!(
                    "{:.1}%: {} … {}",
                    p50_metric.map_or(0.0, |m| m.confidence * 100.0),
                    percent(l),
                    percent(h)
                )));
            }
        }
        if let Some(e) = p99_estimate {
            chart.draw_series(DashedLineSeries::new(
                across(e),
                4,
                4,
                P99_COLOR.stroke_width(2),
            ))?;
            rows.push(LegendRow::line(
                format!("p99 Hodges–Lehmann {}", percent(e)),
                P99_COLOR,
                2,
                true,
            ));
        }
        draw_markers(&mut chart, Marker::Circle, &p50, SERIES_COLOR.filled())?;
        draw_markers(&mut chart, Marker::Triangle, &p99, P99_COLOR.filled())?;
        draw_legend(&legend, &rows)
    })?;
    Ok(Some(svg))
}
