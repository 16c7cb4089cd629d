//! `probes.svg`: each sampled probe's series over the soak's measured part (a gauge as read, a
//! counter as its rate per second), each with its stored Theil–Sen soak slope drawn as a line, as
//! `soak.svg` draws the target's RSS.

use super::draw::{WIDTH, heading, render, zero_to};
use super::soak::{SoakPanel, draw_soak_panel, signed};
use super::view::{run_line, run_name};
use super::{ChartError, PROBES_CHART};
use crate::measure::probe::{ProbeStatus, SeriesKind, format_value};
use crate::result::RunResult;

/// The height of one series' panel.
const PANEL_HEIGHT: u32 = 220;

/// Renders `probes.svg`: one panel per series of every sampled probe with at least two samples in
/// the soak's measured part (`soak.sampled_s`), the time counted from its start. `None` without a
/// soak or without such a series.
pub fn render_probes(head: &RunResult) -> Result<Option<String>, ChartError> {
    let Some([from, to]) = head.soak.as_ref().and_then(|s| s.sampled_s) else {
        return Ok(None);
    };
    let mut panels: Vec<(Vec<(f64, f64)>, SoakPanel)> = Vec::new();
    for probe in head
        .probes
        .iter()
        .filter(|p| p.status == ProbeStatus::Sampled)
    {
        for (name, kind) in &probe.series {
            let points: Vec<(f64, f64)> = probe
                .points(name)
                .into_iter()
                .filter(|(t, _)| (from..=to).contains(t))
                .map(|(t, v)| (t - from, v))
                .collect();
            if points.len() < 2 {
                continue;
            }
            let unit = match kind {
                SeriesKind::Counter => "/s",
                SeriesKind::Gauge => "",
            };
            let per_min = |v: f64| signed(&format_value(v * 60.0));
            let fit = probe.soak_slopes.get(name).map(|s| {
                (
                    s.estimate,
                    vec![
                        format!("Theil–Sen {}{unit} per min", per_min(s.estimate)),
                        format!("95%: {} … {}", per_min(s.low), per_min(s.high)),
                    ],
                )
            });
            // A gauge below zero keeps its axis around the data.
            let zero_based = points.iter().all(|p| p.1 >= 0.0);
            panels.push((
                points,
                SoakPanel {
                    y_desc: format!("{name}{unit}"),
                    series: format!("{} · {name}", probe.name),
                    zero_based,
                    fit,
                },
            ));
        }
    }
    if panels.is_empty() {
        return Ok(None);
    }
    let subtitle = vec![format!(
        "{} Probes sampled once a second: a gauge as read, a counter as its rate per second.",
        run_line(&run_name("head", head), head)
    )];
    let height = 110 + PANEL_HEIGHT * panels.len() as u32;
    let x_max = panels
        .iter()
        .flat_map(|(points, _)| points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let x = zero_to(x_max);
    let svg = render(PROBES_CHART, (WIDTH, height), |root| {
        let area = heading(root, "Probes through the soak", &subtitle)?;
        let areas = area.split_evenly((panels.len(), 1));
        for (area, (points, panel)) in areas.iter().zip(panels) {
            draw_soak_panel(area, x.clone(), &points, panel)?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}
