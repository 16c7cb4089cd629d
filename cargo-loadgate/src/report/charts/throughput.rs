//! `throughput.svg`: the achieved rate and the goodput of each ramp step against its offered
//! load, with the y = x line, the knee and the production load (`result.headroom`).

use super::draw::{
    FONT, GOODPUT_COLOR, INK, LEGEND_WIDTH, LegendRow, MUTED, Marker, PRODUCTION_COLOR,
    SERIES_COLOR, WIDTH, axis_number, draw_knees, draw_legend, draw_markers, draw_production,
    heading, knee_legend, lighter, render, zero_to,
};
use super::view::{RampView, StepState, ramp_view, run_line};
use super::{ChartError, THROUGHPUT_CHART};
use crate::result::RunResult;
use plotters::prelude::*;

/// Renders `throughput.svg`: at each ramp step (in offered order), the achieved rate (answers
/// per second; requests sent per second in results written before answers were counted) and the
/// goodput (correct answers within the SLO latency per second, from the phase's
/// counters) against the offered request rate, with the y = x line of a service that keeps up,
/// the knee, and `base` dashed and lighter when given. Filled points held the SLO, hollow ones
/// broke it, crosses were invalid. `None` when the run has no ramp step.
pub fn render_throughput(
    head: &RunResult,
    base: Option<&RunResult>,
) -> Result<Option<String>, ChartError> {
    let head_result = head;
    let head = ramp_view("head", head);
    let achieved = |r: &RampView| -> Vec<(f64, f64, StepState)> {
        r.steps
            .iter()
            .filter_map(|s| Some((s.offered, s.achieved?, s.state)))
            .collect()
    };
    let goodput = |r: &RampView| -> Vec<(f64, f64, StepState)> {
        r.steps
            .iter()
            .filter_map(|s| Some((s.offered, s.goodput?, s.state)))
            .collect()
    };
    let head_series = [achieved(&head), goodput(&head)];
    if head_series.iter().all(Vec::is_empty) {
        return Ok(None);
    }
    let base = base.map(|b| ramp_view("base", b));
    let base_series = base
        .as_ref()
        .map(|b| [achieved(b), goodput(b)])
        .unwrap_or_default();
    let has_base = base_series.iter().any(|s| !s.is_empty());
    let has_goodput = !head_series[1].is_empty() || !base_series[1].is_empty();
    let max = head_series
        .iter()
        .chain(&base_series)
        .flatten()
        .flat_map(|(x, y, _)| [*x, *y])
        .chain(head.knee)
        .chain(head.production.as_ref().map(|(x, _)| *x))
        .chain(base.as_ref().and_then(|b| b.knee))
        .fold(0.0, f64::max);
    let range = zero_to(max);
    let achieved_label = if head.achieved_is_answers {
        "answered"
    } else {
        "sent (older result)"
    };
    let mut subtitle = vec![if head.achieved_is_answers {
        "Answers received (any outcome), and correct answers within the SLO latency (goodput), per second of measured time at each ramp step."
    } else {
        "Requests sent (this result predates counting answers), and correct answers within the SLO latency (goodput), per second of measured time at each ramp step."
    }
    .to_owned()];
    match &base {
        Some(b) if has_base => subtitle.push(format!(
            "Solid: {} Dashed and lighter: {} (the baseline).",
            run_line(&head.name, head_result),
            b.name
        )),
        _ => subtitle.push(run_line(&head.name, head_result)),
    }
    let svg = render(THROUGHPUT_CHART, (WIDTH, 600), |root| {
        let area = heading(root, "Throughput by offered load", &subtitle)?;
        let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .margin_right(20)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(range.clone(), range.clone())?;
        chart
            .configure_mesh()
            .x_desc("offered load (req/s, measured)")
            .y_desc("throughput (req/s)")
            .x_label_formatter(&axis_number)
            .y_label_formatter(&axis_number)
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 14))
            .max_light_lines(2)
            .light_line_style(RGBColor(0, 0, 0).mix(0.04))
            .draw()?;
        chart.draw_series(DashedLineSeries::new(
            vec![(range.start, range.start), (range.end, range.end)],
            4,
            4,
            MUTED.stroke_width(1),
        ))?;
        // Answered is drawn wide and goodput narrow on top of it: where they agree the goodput
        // line runs inside the answered one, and where answers come late or wrong it falls away
        // below.
        let series = [
            (SERIES_COLOR, 4, Marker::Circle),
            (GOODPUT_COLOR, 2, Marker::Triangle),
        ];
        for (run, is_base) in [(&base_series, true), (&head_series, false)] {
            for (points, (color, stroke, kind)) in run.iter().zip(series) {
                let line: Vec<(f64, f64)> = points.iter().map(|(x, y, _)| (*x, *y)).collect();
                let color = if is_base { lighter(color) } else { color };
                if is_base {
                    chart.draw_series(DashedLineSeries::new(line, 6, 4, color.stroke_width(2)))?;
                } else {
                    chart.draw_series(LineSeries::new(line, color.stroke_width(stroke)))?;
                }
                for (state, kind, style) in [
                    (StepState::Held, kind, color.filled()),
                    (StepState::Broke, kind, color.stroke_width(2)),
                    (StepState::TooFew, kind, MUTED.stroke_width(1)),
                    (StepState::Invalid, Marker::Cross, color.stroke_width(2)),
                ] {
                    let at: Vec<(f64, f64)> = points
                        .iter()
                        .filter(|p| p.2 == state)
                        .map(|(x, y, _)| (*x, *y))
                        .collect();
                    draw_markers(&mut chart, kind, &at, style)?;
                }
            }
        }
        draw_knees(&mut chart, &head, base.as_ref())?;
        if let Some((at, label)) = &head.production {
            draw_production(&mut chart, *at, label)?;
        }
        let mut rows = vec![
            LegendRow::heading("series"),
            LegendRow::line(achieved_label, SERIES_COLOR, 4, false)
                .with_marker(Marker::Circle, true),
        ];
        if has_goodput {
            rows.push(
                LegendRow::line("goodput: correct answers", GOODPUT_COLOR, 2, false)
                    .with_marker(Marker::Triangle, true),
            );
            rows.push(LegendRow::note("within the SLO latency"));
        }
        rows.extend([
            LegendRow::heading("run"),
            LegendRow::line(head.name.clone(), INK, 2, false),
        ]);
        if let Some(b) = base.as_ref().filter(|_| has_base) {
            rows.push(LegendRow::line(b.name.clone(), lighter(INK), 2, true));
        }
        rows.extend([
            LegendRow::heading("step"),
            LegendRow::marker("held the SLO", Marker::Circle, INK, true),
            LegendRow::marker("broke the SLO", Marker::Circle, INK, false),
            LegendRow::marker("too few requests to judge", Marker::Circle, MUTED, false),
            LegendRow::marker("invalid (generator lag)", Marker::Cross, INK, false),
            LegendRow::heading("reference"),
            LegendRow::line("y = x (keeping up)", MUTED, 1, true),
        ]);
        rows.extend(knee_legend(&head));
        if head.production.is_some() {
            rows.push(LegendRow::line(
                "production load (headroom)",
                PRODUCTION_COLOR,
                2,
                true,
            ));
        }
        draw_legend(&legend, &rows)
    })?;
    Ok(Some(svg))
}
