//! `latency.svg`: latency percentiles of each operation class against the offered load of each
//! ramp step, with the SLO's limits and the knee.

use super::draw::{
    Area, DrawResult, FONT, INK, LEGEND_WIDTH, LegendRow, Marker, SLO_COLOR, WIDTH, axis_number,
    class_color, draw_knees, draw_legend, draw_markers, heading, knee_legend, lighter, render,
    zero_to,
};
use super::view::{Percentile, RampView, SloLimit, ramp_view, run_line};
use super::{ChartError, LATENCY_CHART};
use crate::plan::format_latency;
use crate::result::RunResult;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;
use std::time::Duration;

/// Renders `latency.svg`: latency percentiles (p50, p90, p99, max, from the intended send time)
/// of each operation class against the offered load of each ramp step, with the SLO's latency
/// limits, the knee, and `base` dashed and lighter when given. The y-axis is logarithmic when the
/// values span more than two decades. `None` when the run has no ramp step with a request.
pub fn render_latency(
    head: &RunResult,
    base: Option<&RunResult>,
) -> Result<Option<String>, ChartError> {
    let head_result = head;
    let head = ramp_view("head", head);
    if head.steps.is_empty() {
        return Ok(None);
    }
    let base = base
        .map(|b| ramp_view("base", b))
        .filter(|b| !b.steps.is_empty());
    let runs: Vec<&RampView> = std::iter::once(&head).chain(base.as_ref()).collect();
    let mut classes: Vec<String> = Vec::new();
    for step in runs.iter().flat_map(|r| &r.steps) {
        for class in &step.classes {
            if !classes.contains(&class.name) {
                classes.push(class.name.clone());
            }
        }
    }
    let slo = if head.slo.is_empty() {
        base.as_ref().map(|b| b.slo.clone()).unwrap_or_default()
    } else {
        head.slo.clone()
    };
    let values: Vec<f64> = runs
        .iter()
        .flat_map(|r| &r.steps)
        .flat_map(|s| &s.classes)
        .flat_map(|c| Percentile::ALL.into_iter().filter_map(|p| c.get(p)))
        .chain(slo.iter().map(|s| s.ms))
        .filter(|v| *v > 0.0)
        .collect();
    let (Some(low), Some(high)) = (
        values.iter().copied().reduce(f64::min),
        values.iter().copied().reduce(f64::max),
    ) else {
        return Ok(None);
    };
    let x_max = runs
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.offered).chain(r.knee))
        .fold(0.0, f64::max);
    let x = zero_to(x_max);
    let log = high / low > 100.0;
    let data = LatencyData {
        head: &head,
        base: base.as_ref(),
        classes: &classes,
        slo: &slo,
        log,
    };
    let mut subtitle = vec![
        "Per operation class, measured from each request's intended send time; each point is one ramp step (bisection points included).".to_owned(),
    ];
    if let Some(b) = &base {
        subtitle.push(format!(
            "Solid: {} Dashed and lighter: {} (the baseline).",
            run_line(&head.name, head_result),
            b.name
        ));
    } else {
        subtitle.push(run_line(&head.name, head_result));
    }
    if slo.is_empty() {
        subtitle.push(if head_result.slo.is_some() {
            "No SLO line: the SLO has no latency limit.".to_owned()
        } else {
            "No SLO line: this result predates recording the SLO, and no step broke on a latency limit."
                .to_owned()
        });
    }
    let height = 600 + 18 * (subtitle.len() as u32 - 1);
    let svg = render(LATENCY_CHART, (WIDTH, height), |root| {
        let area = heading(
            root,
            &format!(
                "Latency by offered load{}",
                if log { " (log scale)" } else { "" }
            ),
            &subtitle,
        )?;
        let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
        if log {
            let y = (low / 1.5..high * 1.5).log_scale();
            draw_latency_plot(&plot, x, y, &data)?;
        } else {
            draw_latency_plot(&plot, x, 0.0..high * 1.1, &data)?;
        }
        draw_legend(&legend, &latency_legend(&data))
    })?;
    Ok(Some(svg))
}

/// What the latency plot draws.
pub(super) struct LatencyData<'a> {
    pub(super) head: &'a RampView,
    pub(super) base: Option<&'a RampView>,
    pub(super) classes: &'a [String],
    pub(super) slo: &'a [SloLimit],
    pub(super) log: bool,
}

pub(super) fn draw_latency_plot<Y>(
    plot: &Area<'_>,
    x: Range<f64>,
    y: Y,
    data: &LatencyData<'_>,
) -> DrawResult
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(plot)
        .margin(12)
        .margin_right(20)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc("offered load (req/s, measured)")
        .y_desc("latency (ms)")
        .x_label_formatter(&axis_number)
        .y_label_formatter(&axis_number)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .max_light_lines(2)
        .light_line_style(RGBColor(0, 0, 0).mix(0.04))
        .draw()?;
    let (x0, x1) = (chart.x_range().start, chart.x_range().end);
    for limit in data.slo {
        chart.draw_series(DashedLineSeries::new(
            vec![(x0, limit.ms), (x1, limit.ms)],
            10,
            5,
            SLO_COLOR.stroke_width(2),
        ))?;
        chart.draw_series(std::iter::once(
            // At the left end, where the latency of a ramp is lowest and the label stays clear.
            EmptyElement::at((x0, limit.ms))
                + Text::new(
                    format!("SLO {} {}", limit.label, format_ms(limit.ms)),
                    (6, -4),
                    TextStyle::from((FONT, 13).into_font())
                        .color(&SLO_COLOR)
                        .pos(Pos::new(HPos::Left, VPos::Bottom)),
                ),
        ))?;
    }
    let runs = std::iter::once((data.head, false)).chain(data.base.map(|b| (b, true)));
    // The base first, so the head's lines are drawn over it.
    let mut runs: Vec<(&RampView, bool)> = runs.collect();
    runs.reverse();
    for (run, is_base) in runs {
        for (index, class) in data.classes.iter().enumerate() {
            let color = if is_base {
                lighter(class_color(index))
            } else {
                class_color(index)
            };
            for p in Percentile::ALL {
                let judged: Vec<(f64, f64, bool)> = run
                    .steps
                    .iter()
                    .filter_map(|s| {
                        let c = s.classes.iter().find(|c| &c.name == class)?;
                        let v = c.get(p)?;
                        (!data.log || v > 0.0).then_some((s.offered, v, c.judged))
                    })
                    .collect();
                let points: Vec<(f64, f64)> = judged.iter().map(|(x, y, _)| (*x, *y)).collect();
                if points.is_empty() {
                    continue;
                }
                if is_base {
                    chart.draw_series(DashedLineSeries::new(
                        points.clone(),
                        6,
                        4,
                        color.stroke_width(p.stroke().saturating_sub(1).max(1)),
                    ))?;
                    draw_markers(&mut chart, p.marker(), &points, color.stroke_width(1))?;
                } else {
                    chart.draw_series(LineSeries::new(
                        points.clone(),
                        color.stroke_width(p.stroke()),
                    ))?;
                    for (is_judged, style) in
                        [(true, color.filled()), (false, color.stroke_width(2))]
                    {
                        let at: Vec<(f64, f64)> = judged
                            .iter()
                            .filter(|j| j.2 == is_judged)
                            .map(|(x, y, _)| (*x, *y))
                            .collect();
                        draw_markers(&mut chart, p.marker(), &at, style)?;
                    }
                }
            }
        }
    }
    draw_knees(&mut chart, data.head, data.base)
}

/// A latency for people from milliseconds.
pub(super) fn format_ms(ms: f64) -> String {
    Duration::try_from_secs_f64(ms / 1e3).map_or_else(|_| format!("{ms} ms"), format_latency)
}

pub(super) fn latency_legend(data: &LatencyData<'_>) -> Vec<LegendRow> {
    let mut rows = vec![LegendRow::heading("operation class")];
    for (index, class) in data.classes.iter().enumerate() {
        rows.push(
            LegendRow::line(class.clone(), class_color(index), 3, false)
                .with_marker(Marker::Circle, true),
        );
    }
    rows.push(LegendRow::heading("percentile"));
    for p in Percentile::ALL {
        rows.push(LegendRow::line(p.label(), INK, p.stroke(), false).with_marker(p.marker(), true));
    }
    let unjudged = data
        .head
        .steps
        .iter()
        .flat_map(|s| &s.classes)
        .any(|c| !c.judged);
    if unjudged {
        rows.push(LegendRow::marker(
            "hollow: too few requests,",
            Marker::Circle,
            INK,
            false,
        ));
        rows.push(LegendRow::note("not judged (slo.min-requests)"));
    }
    rows.push(LegendRow::heading("run"));
    rows.push(LegendRow::line(data.head.name.clone(), INK, 2, false));
    if let Some(base) = data.base {
        rows.push(LegendRow::line(base.name.clone(), lighter(INK), 2, true));
    }
    if !data.slo.is_empty() || data.head.knee.is_some() {
        rows.push(LegendRow::heading("limits"));
    }
    for limit in data.slo {
        rows.push(LegendRow::line(
            format!("SLO {} {}", limit.label, format_ms(limit.ms)),
            SLO_COLOR,
            2,
            true,
        ));
    }
    rows.extend(knee_legend(data.head));
    rows
}
