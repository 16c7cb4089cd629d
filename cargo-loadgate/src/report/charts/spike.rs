//! `spike.svg` and `stress.svg`: a spike or a stress phase second by second (issue 15): the
//! requests sent, answered correctly and failed per second, with the spike (the overload) shaded,
//! and the p99 of each window against the SLO's p99 limit, with the moment the service was stable
//! again; a stress's compared stretches are shaded lightly.

use super::draw::{
    Area, DrawResult, GOODPUT_COLOR, INK, LEGEND_WIDTH, LegendRow, Marker, SERIES_COLOR, SLO_COLOR,
    WIDTH, draw_legend, draw_markers, heading, linear_chart, render, zero_to,
};
use super::{ChartError, SPIKE_CHART, STRESS_CHART};
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
    let title = format!(
        "Spike from {} to {} sessions/s: {}",
        format_rate(spike.from_sessions_per_sec),
        format_rate(spike.to_sessions_per_sec),
        spike.admission.admission.label()
    );
    let mut subtitle = vec![recovery_line(
        &spike.recovery,
        spike.recovery_windows,
        "the spike",
    )];
    if let Some(check) = &spike.check {
        subtitle.push(format!("Recovery check: {}.", check.reason));
    }
    if !spike.valid {
        subtitle.push(invalid_line(&spike.invalid_reasons));
    }
    render_event(
        head,
        EventChart {
            file: SPIKE_CHART,
            phase: &spike.phase,
            event: "the spike",
            shaded: spike.starts.as_secs_f64()..spike.ends.as_secs_f64(),
            compared: Vec::new(),
            stable_after: spike.recovery.after(),
            title,
            subtitle,
        },
    )
}

/// Renders `stress.svg`: the stress phase as `spike.svg` draws a spike, the overload shaded, and
/// the two stretches compared (before the overload, and the end of the stretch after it) shaded
/// lightly. `None` when the run has no stress, or its phase no window.
pub fn render_stress(head: &RunResult) -> Result<Option<String>, ChartError> {
    let Some(stress) = &head.stress else {
        return Ok(None);
    };
    let title = format!(
        "Stress from {} to {} sessions/s and back: {}",
        format_rate(stress.from_sessions_per_sec),
        format_rate(stress.to_sessions_per_sec),
        stress.harm.label()
    );
    let mut subtitle = vec![
        format!("{}.", stress.reason),
        recovery_line(&stress.recovery, stress.recovery_windows, "the overload"),
    ];
    if let Some(check) = &stress.check {
        subtitle.push(format!("Recovery check: {}.", check.reason));
    }
    if !stress.valid {
        subtitle.push(invalid_line(&stress.invalid_reasons));
    }
    let end = (stress.compared_from + stress.starts).as_secs_f64();
    render_event(
        head,
        EventChart {
            file: STRESS_CHART,
            phase: &stress.phase,
            event: "the overload",
            shaded: stress.starts.as_secs_f64()..stress.ends.as_secs_f64(),
            compared: vec![
                0.0..stress.starts.as_secs_f64(),
                stress.compared_from.as_secs_f64()..end,
            ],
            stable_after: stress.recovery.after(),
            title,
            subtitle,
        },
    )
}

/// "Stable SLO again 2.0 s after the spike (5 good windows in a row)." or not.
fn recovery_line(recovery: &Recovery, windows: usize, event: &str) -> String {
    match recovery {
        Recovery::Recovered { after, .. } => format!(
            "Stable SLO again {:.1} s after {event} ({windows} good windows in a row).",
            after.as_secs_f64(),
        ),
        Recovery::NotRecovered {
            observed,
            longest_run,
        } => format!(
            "Not stable within the {:.1} s after {event} ({windows} good windows in a row needed, \
             longest run {longest_run}).",
            observed.as_secs_f64(),
        ),
    }
}

fn invalid_line(reasons: &[String]) -> String {
    format!(
        "Invalid: {} (the windows may not show what the service did).",
        reasons.join("; ")
    )
}

/// A phase with an event in it, drawn second by second.
struct EventChart<'a> {
    file: &'static str,
    /// The phase's name in the result.
    phase: &'a str,
    /// "the spike": what the shading is, in the legends.
    event: &'static str,
    /// The event's interval, from the start of the phase's measured part.
    shaded: Range<f64>,
    /// Stretches shaded lightly: the ones compared (a stress's).
    compared: Vec<Range<f64>>,
    /// From the event's end to stability again.
    stable_after: Option<std::time::Duration>,
    title: String,
    subtitle: Vec<String>,
}

/// Draws `chart`'s phase of `head`: the rates panel and the p99 panel.
fn render_event(head: &RunResult, chart: EventChart<'_>) -> Result<Option<String>, ChartError> {
    let Some(phase) = head
        .phases
        .iter()
        .find(|p| p.measurement.name == chart.phase)
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
    let stable = chart
        .stable_after
        .map(|after| chart.shaded.end + after.as_secs_f64());
    let x_max = windows
        .iter()
        .map(|w| (w.start + w.length).as_secs_f64())
        .fold(0.0, f64::max);
    let x = 0.0..x_max;
    let shading = Shading {
        x_label: format!("time into the {} phase's measured part (s)", chart.phase),
        event: chart.event,
        shaded: chart.shaded.clone(),
        compared: chart.compared.clone(),
    };
    let height = 110 + 300 * 2 + 18 * (chart.subtitle.len() as u32 - 1);
    let svg = render(chart.file, (WIDTH, height), |root| {
        let area = heading(root, &chart.title, &chart.subtitle)?;
        let areas = area.split_evenly((2, 1));
        draw_rates(
            &areas[0],
            x.clone(),
            &shading,
            [sent.as_slice(), good.as_slice(), failed.as_slice()],
        )?;
        draw_p99(&areas[1], x.clone(), &shading, &p99, limit, stable)
    })?;
    Ok(Some(svg))
}

/// What both panels shade, and how they name it.
struct Shading {
    x_label: String,
    event: &'static str,
    shaded: Range<f64>,
    compared: Vec<Range<f64>>,
}

impl Shading {
    /// The legend's notes of the shading.
    fn notes(&self, rows: &mut Vec<LegendRow>) {
        rows.push(LegendRow::note(format!("shaded: {}", self.event)));
        if !self.compared.is_empty() {
            rows.push(LegendRow::note("lightly: the stretches compared"));
        }
    }
}

/// The event's interval, shaded across the panel's height, and the compared stretches lightly.
fn shade(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    shading: &Shading,
    y: &Range<f64>,
) -> DrawResult {
    chart.draw_series(
        shading
            .compared
            .iter()
            .map(|r| Rectangle::new([(r.start, y.start), (r.end, y.end)], INK.mix(0.03).filled())),
    )?;
    chart.draw_series(std::iter::once(Rectangle::new(
        [(shading.shaded.start, y.start), (shading.shaded.end, y.end)],
        INK.mix(0.08).filled(),
    )))?;
    Ok(())
}

/// The first panel: requests sent, answered correctly and failed per second.
fn draw_rates(
    area: &Area<'_>,
    x: Range<f64>,
    shading: &Shading,
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
        (shading.x_label.as_str(), "requests per second"),
    )?;
    shade(&mut chart, shading, &y)?;
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
    shading.notes(&mut rows);
    draw_legend(&legend, &rows)
}

/// The second panel: the p99 of each window, the SLO's p99 limit and the moment of stability.
fn draw_p99(
    area: &Area<'_>,
    x: Range<f64>,
    shading: &Shading,
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
        (shading.x_label.as_str(), "p99 latency (ms)"),
    )?;
    shade(&mut chart, shading, &y)?;
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
    shading.notes(&mut rows);
    draw_legend(&legend, &rows)
}
