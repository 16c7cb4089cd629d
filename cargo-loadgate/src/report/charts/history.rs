//! `history-<metric>.svg`: one metric over the commits of a history (`cargo loadgate history`):
//! each commit's figure with its interval as an error bar, the change points as dashed lines
//! with their size, and the accepted steps as green lines. It draws the history document
//! ([`HistoryResult`]) and computes nothing: the points, intervals and change points are
//! `compare::history`'s.

use super::ChartError;
use super::draw::{
    Area, DrawResult, INK, LEGEND_WIDTH, LegendRow, Marker, SERIES_COLOR, WIDTH, draw_legend,
    draw_markers, heading, linear_chart, render, text_style,
};
use crate::baseline::short;
use crate::compare::{change_phrase, metric_label};
use crate::result::{HistoryResult, Metric, MetricHistory};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// The name [`ChartError::Draw`] gives every history chart.
pub const HISTORY_CHART: &str = "history-<metric>.svg";

/// The colour of a change point's line.
pub(super) const CHANGE_COLOR: RGBColor = RGBColor(214, 39, 40);
/// The colour of an accepted step's line.
pub(super) const ACCEPT_COLOR: RGBColor = RGBColor(44, 160, 44);

/// The file name of the chart of `metric`: `history-p99.svg`, `history-p99-login.svg`.
pub fn history_chart_name(metric: &MetricHistory) -> String {
    let op: String = metric
        .operation
        .as_deref()
        .map(|o| {
            let safe: String = o
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            format!("-{safe}")
        })
        .unwrap_or_default();
    format!("history-{}{op}.svg", metric.metric.as_str())
}

/// Renders the chart of `metric` of `doc`: x is the commit's place in the walk (oldest at the
/// left, so commits without a result leave gaps), y the figure in its unit. `None` when the
/// metric has no point.
pub fn render_history(
    doc: &HistoryResult,
    metric: &MetricHistory,
) -> Result<Option<String>, ChartError> {
    if metric.points.is_empty() {
        return Ok(None);
    }
    let place = |commit: &str| {
        doc.commits
            .iter()
            .position(|c| c.commit == commit)
            .map_or(0.0, |i| i as f64)
    };
    let scale = if metric.metric == Metric::ErrorRate {
        100.0
    } else {
        1.0
    };
    let unit = if metric.metric == Metric::ErrorRate {
        "%"
    } else {
        metric.unit.as_str()
    };
    let points: Vec<(f64, f64, f64, f64)> = metric
        .points
        .iter()
        .map(|p| {
            (
                place(&p.commit),
                p.estimate * scale,
                p.low * scale,
                p.high * scale,
            )
        })
        .collect();
    let accepted: Vec<(f64, String)> = doc
        .commits
        .iter()
        .enumerate()
        .filter(|(_, c)| c.accepted)
        .map(|(i, c)| (i as f64, short(&c.commit).to_owned()))
        .collect();
    let name = metric_label(metric.metric, metric.operation.as_deref());
    let title = format!("{name} over {} commit(s)", doc.commits.len());
    let subtitle = vec![format!(
        "{} to {} in {}; each point's bar is its run's 95% interval. {} change point(s).",
        doc.commits.first().map_or("?", |c| short(&c.commit)),
        short(&doc.head),
        doc.store,
        metric.change_points.len()
    )];
    let x_max = (doc.commits.len().max(2) - 1) as f64;
    let (low, high) = points.iter().fold((f64::INFINITY, 0.0f64), |(l, h), p| {
        (l.min(p.2), h.max(p.3))
    });
    let pad = ((high - low) * 0.1).max(high * 0.02).max(1e-9);
    let y = (low - pad).max(0.0)..high + pad;
    let height = 460;
    let svg = render(HISTORY_CHART, (WIDTH, height), |root| {
        let area = heading(root, &title, &subtitle)?;
        let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
        draw_plot(
            &plot,
            (-0.5..x_max + 0.5, y.clone()),
            &points,
            &metric_changes(metric, &place),
            &accepted,
            &format!("{name} ({unit})"),
        )?;
        let mut rows = vec![
            LegendRow::marker("a commit's figure", Marker::Circle, SERIES_COLOR, true),
            LegendRow::line("its 95% interval", SERIES_COLOR, 1, false),
        ];
        if !metric.change_points.is_empty() {
            rows.push(LegendRow::line("change point", CHANGE_COLOR, 2, true));
            rows.extend(metric.change_points.iter().map(|c| {
                LegendRow::note(format!(
                    "{} at {}{}",
                    change_phrase(metric.metric, c.estimate),
                    short(&c.commit),
                    if c.accepted { " (accepted)" } else { "" }
                ))
            }));
        }
        if !accepted.is_empty() {
            rows.push(LegendRow::line("accepted step", ACCEPT_COLOR, 2, false));
        }
        draw_legend(&legend, &rows)
    })?;
    Ok(Some(svg))
}

/// A change point as drawn: its place (between the last commit before and its commit), its
/// location interval's ends, and its label.
struct ChangeMark {
    at: f64,
    from: f64,
    to: f64,
    label: String,
}

fn metric_changes(metric: &MetricHistory, place: &dyn Fn(&str) -> f64) -> Vec<ChangeMark> {
    metric
        .change_points
        .iter()
        .map(|c| ChangeMark {
            at: place(&c.commit) - 0.5,
            from: place(&c.earliest) - 0.5,
            to: place(&c.latest) - 0.5,
            label: change_phrase(metric.metric, c.estimate),
        })
        .collect()
}

fn draw_plot(
    plot: &Area<'_>,
    (x, y): (std::ops::Range<f64>, std::ops::Range<f64>),
    points: &[(f64, f64, f64, f64)],
    changes: &[ChangeMark],
    accepted: &[(f64, String)],
    y_desc: &str,
) -> DrawResult {
    let (y_low, y_high) = (y.start, y.end);
    let mut chart = linear_chart(plot, (x, y), ("commit, oldest first", y_desc))?;
    for (at, commit) in accepted {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(*at, y_low), (*at, y_high)],
            ACCEPT_COLOR.stroke_width(2),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("accepted {commit}"),
            (*at, y_high),
            text_style(11, &ACCEPT_COLOR),
        )))?;
    }
    for c in changes {
        // The location interval as a light band, the change itself dashed.
        if c.to > c.from {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(c.from, y_low), (c.to, y_high)],
                CHANGE_COLOR.mix(0.08).filled(),
            )))?;
        }
        chart.draw_series(std::iter::once(DashedPathElement::new(
            vec![(c.at, y_low), (c.at, y_high)],
            6,
            4,
            CHANGE_COLOR.stroke_width(2),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            c.label.clone(),
            (c.at, y_low + (y_high - y_low) * 0.06),
            text_style(12, &INK),
        )))?;
    }
    chart.draw_series(
        points
            .iter()
            .map(|&(x, _, low, high)| PathElement::new(vec![(x, low), (x, high)], SERIES_COLOR)),
    )?;
    let centres: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
    chart.draw_series(LineSeries::new(
        centres.iter().copied(),
        SERIES_COLOR.mix(0.4).stroke_width(1),
    ))?;
    draw_markers(&mut chart, Marker::Circle, &centres, SERIES_COLOR.filled())
}
