//! `soak.svg`: the soak's RSS and p99 series, each with its stored Theil–Sen slope drawn as a
//! line.

use super::draw::{
    Area, DrawResult, FIT_COLOR, LEGEND_WIDTH, LegendRow, Marker, SERIES_COLOR, WIDTH, draw_legend,
    draw_markers, heading, linear_chart, render, zero_to,
};
use super::view::{MIB, run_line, run_name, soak_view};
use super::{ChartError, SOAK_CHART};
use crate::plan::{format_bytes_per_sec, format_rate};
use crate::result::RunResult;
use crate::stats::theil_sen_intercept;
use plotters::prelude::*;
use std::ops::Range;

/// Renders `soak.svg`: the target's RSS (MiB, one sample a second) and the p99 latency of each
/// window (ms, from the intended send time) over the soak's measured part, each with its stored
/// Theil–Sen slope drawn as a line through the Theil–Sen intercept. `None` when the run has no
/// soak, or a soak with neither series.
pub fn render_soak(head: &RunResult) -> Result<Option<String>, ChartError> {
    let Some(soak) = soak_view(head) else {
        return Ok(None);
    };
    if soak.rss.is_empty() && soak.p99.is_empty() {
        return Ok(None);
    }
    let title = match (soak.offered, soak.share) {
        (Some(rate), Some(share)) => format!(
            "Soak at {} req/s offered ({:.0}% of the capacity)",
            format_rate(rate),
            share * 100.0
        ),
        (Some(rate), None) => format!("Soak at {} req/s offered", format_rate(rate)),
        _ => "Soak".to_owned(),
    };
    let mut subtitle = vec![format!(
        "{} RSS sampled once a second; p99 of each window, from each request's intended send time.",
        run_line(&run_name("head", head), head)
    )];
    if soak.notes.is_empty() {
        subtitle.push("No leak flagged.".to_owned());
    } else {
        subtitle.extend(soak.notes.iter().cloned());
    }
    let rss_fit = soak.rss_slope.map(|s| {
        (
            s.estimate / MIB,
            vec![
                format!("Theil–Sen {}", signed(&format_bytes_per_sec(s.estimate))),
                format!(
                    "95%: {} … {}",
                    format_bytes_per_sec(s.low),
                    format_bytes_per_sec(s.high)
                ),
            ],
        )
    });
    let per_min = |v: f64| v * 1e3 * 60.0;
    let p99_fit = soak.p99_slope.map(|s| {
        (
            s.estimate * 1e3,
            vec![
                format!("Theil–Sen {:+.2} ms/min", per_min(s.estimate)),
                format!(
                    "95%: {:+.2} … {:+.2} ms/min",
                    per_min(s.low),
                    per_min(s.high)
                ),
            ],
        )
    });
    let panels: Vec<(&[(f64, f64)], SoakPanel)> = [
        (
            soak.rss.as_slice(),
            SoakPanel {
                y_desc: "RSS (MiB)".into(),
                series: "RSS, 1 s samples".into(),
                zero_based: false,
                fit: rss_fit,
            },
        ),
        (
            soak.p99.as_slice(),
            SoakPanel {
                y_desc: "p99 latency (ms)".into(),
                series: "p99 per 1 s window".into(),
                zero_based: true,
                fit: p99_fit,
            },
        ),
    ]
    .into_iter()
    .filter(|(points, _)| !points.is_empty())
    .collect();
    let height = 110 + 300 * panels.len() as u32 + 18 * (subtitle.len() as u32 - 1);
    let x_max = soak
        .rss
        .iter()
        .chain(&soak.p99)
        .map(|(x, _)| *x)
        .fold(0.0, f64::max);
    let x = zero_to(x_max);
    let svg = render(SOAK_CHART, (WIDTH, height), |root| {
        let area = heading(root, &title, &subtitle)?;
        let areas = area.split_evenly((panels.len(), 1));
        for (area, (points, panel)) in areas.iter().zip(panels) {
            draw_soak_panel(area, x.clone(), points, panel)?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

/// `+1.2 KiB/s` for a non-negative figure (the formatter signs only negative ones).
pub(super) fn signed(text: &str) -> String {
    if text.starts_with('-') {
        text.to_owned()
    } else {
        format!("+{text}")
    }
}

/// One panel of the soak chart.
pub(super) struct SoakPanel {
    pub(super) y_desc: String,
    pub(super) series: String,
    /// Whether the y-axis starts at zero (latency) or hugs the data (RSS, whose growth matters).
    pub(super) zero_based: bool,
    /// The slope in y-units per second, and its legend lines.
    pub(super) fit: Option<(f64, Vec<String>)>,
}

pub(super) fn draw_soak_panel(
    area: &Area<'_>,
    x: Range<f64>,
    points: &[(f64, f64)],
    panel: SoakPanel,
) -> DrawResult {
    let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
    let line = panel.fit.as_ref().and_then(|(slope, _)| {
        let intercept = theil_sen_intercept(points, *slope)?;
        let (from, to) = (
            points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min),
            points.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
        );
        Some(vec![
            (from, intercept + slope * from),
            (to, intercept + slope * to),
        ])
    });
    let ys = points
        .iter()
        .map(|p| p.1)
        .chain(line.iter().flatten().map(|p| p.1));
    let (low, high) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), y| {
        (l.min(y), h.max(y))
    });
    let y = if panel.zero_based {
        zero_to(high)
    } else {
        let pad = ((high - low) * 0.15).max(0.25);
        (low - pad).max(0.0)..high + pad
    };
    let mut chart = linear_chart(
        &plot,
        (x, y),
        (
            "time into the soak's measured part (s)",
            panel.y_desc.as_str(),
        ),
    )?;
    chart.draw_series(LineSeries::new(
        points.iter().copied(),
        SERIES_COLOR.stroke_width(2),
    ))?;
    draw_markers(&mut chart, Marker::Circle, points, SERIES_COLOR.filled())?;
    if let Some(line) = &line {
        chart.draw_series(LineSeries::new(
            line.iter().copied(),
            FIT_COLOR.stroke_width(3),
        ))?;
    }
    let mut rows = vec![
        LegendRow::line(panel.series.clone(), SERIES_COLOR, 2, false)
            .with_marker(Marker::Circle, true),
    ];
    match (&panel.fit, &line) {
        (Some((_, text)), Some(_)) => {
            let mut lines = text.iter();
            if let Some(first) = lines.next() {
                rows.push(LegendRow::line(first.clone(), FIT_COLOR, 3, false));
            }
            rows.extend(lines.map(|l| LegendRow::note(l.clone())));
        }
        _ => rows.push(LegendRow::note("no slope: too few points")),
    }
    draw_legend(&legend, &rows)
}
