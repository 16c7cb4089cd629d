//! `spike.svg`: a spike phase second by second (issue 15): the requests sent, answered correctly
//! and failed per second, with the spike shaded, and the p99 of each window against the SLO's p99
//! limit, with the moment the service was stable again.

use super::draw::{
    Area, DrawResult, GOODPUT_COLOR, INK, LEGEND_WIDTH, LegendRow, Marker, SERIES_COLOR, SLO_COLOR,
    WIDTH, draw_legend, draw_markers, heading, linear_chart, render, zero_to,
};
use super::{ChartError, SPIKE_CHART};
use crate::measure::Window;
use crate::plan::{Recovery, format_rate};
use crate::result::RunResult;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;

/// The colour of the moment the service was stable again.
const STABLE_COLOR: RGBColor = RGBColor(148, 103, 189);

/// Renders `spike.svg`: two panels over the spike phase's measured part (x in seconds from its
/// start), the spike's interval shaded in both. The first has the requests sent, answered
/// correctly and failed per second of each window; the second the p99 of each window (from each
/// request's intended send time) with the SLO's p99 limit dashed and, when the service recovered,
/// a line where it was stable again. `None` when the run has no spike, or its phase no window.
pub fn render_spike(head: &RunResult) -> Result<Option<String>, ChartError> {
    let Some(spike) = &head.spike else {
        return Ok(None);
    };
    let Some(phase) = head
        .phases
        .iter()
        .find(|p| p.measurement.name == spike.phase)
    else {
        return Ok(None);
    };
    let windows: Vec<&Window> = phase
        .measurement
        .windows
        .windows
        .iter()
        .filter(|w| !w.length.is_zero())
        .collect();
    if windows.is_empty() {
        return Ok(None);
    }
    let middle = |w: &Window| (w.start + w.length / 2).as_secs_f64();
    let rate = |w: &Window, count: u64| count as f64 / w.length.as_secs_f64();
    let series = |count: fn(&Window) -> u64| -> Vec<(f64, f64)> {
        windows
            .iter()
            .copied()
            .map(|w| (middle(w), rate(w, count(w))))
            .collect()
    };
    let sent = series(|w| w.sent);
    let good = series(|w| w.completed.saturating_sub(w.errors));
    let failed = series(|w| w.errors);
    let p99: Vec<(f64, f64)> = windows
        .iter()
        .copied()
        .filter(|w| w.completed > 0)
        .map(|w| (middle(w), w.p99.as_secs_f64() * 1e3))
        .collect();
    let limit = head.slo.as_ref().and_then(|s| {
        s.latency
            .iter()
            .find(|l| (l.quantile - 0.99).abs() < 1e-9)
            .map(|l| l.limit_ms)
    });
    let shaded = spike.starts.as_secs_f64()..spike.ends.as_secs_f64();
    let stable = spike
        .recovery
        .after()
        .map(|after| shaded.end + after.as_secs_f64());

    let title = format!(
        "Spike from {} to {} sessions/s: {}",
        format_rate(spike.from_sessions_per_sec),
        format_rate(spike.to_sessions_per_sec),
        spike.admission.admission.label()
    );
    let mut subtitle = vec![match &spike.recovery {
        Recovery::Recovered { after, .. } => format!(
            "Stable SLO again {:.1} s after the spike ({} good windows in a row).",
            after.as_secs_f64(),
            spike.recovery_windows
        ),
        Recovery::NotRecovered {
            observed,
            longest_run,
        } => format!(
            "Not stable within the {:.1} s after the spike ({} good windows in a row needed, \
             longest run {longest_run}).",
            observed.as_secs_f64(),
            spike.recovery_windows
        ),
    }];
    if let Some(check) = &spike.check {
        subtitle.push(format!("Recovery check: {}.", check.reason));
    }
    if !spike.valid {
        subtitle.push(format!(
            "Invalid: {} (the windows may not show what the service did).",
            spike.invalid_reasons.join("; ")
        ));
    }
    let x_max = windows
        .iter()
        .map(|w| (w.start + w.length).as_secs_f64())
        .fold(0.0, f64::max);
    let x = 0.0..x_max;
    let height = 110 + 300 * 2 + 18 * (subtitle.len() as u32 - 1);
    let svg = render(SPIKE_CHART, (WIDTH, height), |root| {
        let area = heading(root, &title, &subtitle)?;
        let areas = area.split_evenly((2, 1));
        draw_rates(
            &areas[0],
            x.clone(),
            &shaded,
            [sent.as_slice(), good.as_slice(), failed.as_slice()],
        )?;
        draw_p99(&areas[1], x.clone(), &shaded, &p99, limit, stable)
    })?;
    Ok(Some(svg))
}

/// The spike's interval, shaded across the panel's height.
fn shade(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    shaded: &Range<f64>,
    y: &Range<f64>,
) -> DrawResult {
    chart.draw_series(std::iter::once(Rectangle::new(
        [(shaded.start, y.start), (shaded.end, y.end)],
        INK.mix(0.08).filled(),
    )))?;
    Ok(())
}

/// The first panel: requests sent, answered correctly and failed per second.
fn draw_rates(
    area: &Area<'_>,
    x: Range<f64>,
    shaded: &Range<f64>,
    [sent, good, failed]: [&[(f64, f64)]; 3],
) -> DrawResult {
    let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
    let high = sent
        .iter()
        .chain(good)
        .chain(failed)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let y = zero_to(high);
    let mut chart = linear_chart(
        &plot,
        (x, y.clone()),
        (
            "time into the spike phase's measured part (s)",
            "requests per second",
        ),
    )?;
    shade(&mut chart, shaded, &y)?;
    let mut rows = vec![LegendRow::heading("per 1 s window")];
    for (points, label, color, triangle) in [
        (sent, "sent", SERIES_COLOR, false),
        (good, "answered correctly", GOODPUT_COLOR, true),
        (failed, "failed", SLO_COLOR, false),
    ] {
        if points.is_empty() {
            continue;
        }
        let marker = || {
            if triangle {
                Marker::Triangle
            } else {
                Marker::Circle
            }
        };
        chart.draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(2),
        ))?;
        draw_markers(&mut chart, marker(), points, color.filled())?;
        rows.push(LegendRow::line(label, color, 2, false).with_marker(marker(), true));
    }
    rows.push(LegendRow::note("shaded: the spike"));
    draw_legend(&legend, &rows)
}

/// The second panel: the p99 of each window, the SLO's p99 limit and the moment of stability.
fn draw_p99(
    area: &Area<'_>,
    x: Range<f64>,
    shaded: &Range<f64>,
    p99: &[(f64, f64)],
    limit: Option<f64>,
    stable: Option<f64>,
) -> DrawResult {
    let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
    let high = p99.iter().map(|p| p.1).chain(limit).fold(0.0, f64::max);
    let y = zero_to(high);
    let mut chart = linear_chart(
        &plot,
        (x.clone(), y.clone()),
        (
            "time into the spike phase's measured part (s)",
            "p99 latency (ms)",
        ),
    )?;
    shade(&mut chart, shaded, &y)?;
    let mut rows = vec![LegendRow::heading("per 1 s window")];
    if !p99.is_empty() {
        chart.draw_series(LineSeries::new(
            p99.iter().copied(),
            SERIES_COLOR.stroke_width(2),
        ))?;
        draw_markers(&mut chart, Marker::Circle, p99, SERIES_COLOR.filled())?;
        rows.push(
            LegendRow::line("p99, from the intended send time", SERIES_COLOR, 2, false)
                .with_marker(Marker::Circle, true),
        );
    }
    rows.push(LegendRow::heading("lines"));
    if let Some(limit) = limit {
        chart.draw_series(DashedLineSeries::new(
            vec![(x.start, limit), (x.end, limit)],
            8,
            5,
            SLO_COLOR.stroke_width(2),
        ))?;
        rows.push(LegendRow::line(
            format!("SLO p99 {limit:.0} ms"),
            SLO_COLOR,
            2,
            true,
        ));
    }
    match stable {
        Some(at) => {
            chart.draw_series(LineSeries::new(
                vec![(at, y.start), (at, y.end)],
                STABLE_COLOR.stroke_width(2),
            ))?;
            rows.push(LegendRow::line("stable again", STABLE_COLOR, 2, false));
        }
        None => rows.push(LegendRow::note("not stable again in the phase")),
    }
    rows.push(LegendRow::note("shaded: the spike"));
    draw_legend(&legend, &rows)
}
