//! The SVG drawing helpers the three charts share: colours, markers, the heading, the legend,
//! axis numbers and the knee lines, drawn with plotters' SVG backend.

use super::ChartError;
use super::view::RampView;
use crate::plan::format_rate;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
pub(super) type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Operation classes, in the order they first appear; chosen to stay apart on white and from
/// the SLO's red.
pub(super) const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(127, 127, 127),
];
pub(super) const SLO_COLOR: RGBColor = RGBColor(178, 34, 34);
pub(super) const KNEE_COLOR: RGBColor = RGBColor(0, 0, 0);
pub(super) const INK: RGBColor = RGBColor(36, 41, 47);
pub(super) const MUTED: RGBColor = RGBColor(87, 96, 106);
/// The fitted slope in the soak chart.
pub(super) const FIT_COLOR: RGBColor = RGBColor(214, 39, 40);
pub(super) const SERIES_COLOR: RGBColor = RGBColor(31, 119, 180);
/// The production load's line in the throughput chart.
pub(super) const PRODUCTION_COLOR: RGBColor = RGBColor(148, 103, 189);
/// Goodput in the throughput chart.
pub(super) const GOODPUT_COLOR: RGBColor = RGBColor(44, 160, 44);

pub(super) const WIDTH: u32 = 1000;
pub(super) const LEGEND_WIDTH: u32 = 230;
pub(super) const FONT: &str = "sans-serif";

/// `color` mixed with white: the base's lines.
pub(super) fn lighter(color: RGBColor) -> RGBColor {
    let mix = |c: u8| (f64::from(c) + (255.0 - f64::from(c)) * 0.5).round() as u8;
    RGBColor(mix(color.0), mix(color.1), mix(color.2))
}

pub(super) fn class_color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// A marker drawn at a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

/// Draws a marker at each of `points` in a chart's data coordinates.
pub(super) fn draw_markers<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    kind: Marker,
    points: &[(f64, f64)],
    style: ShapeStyle,
) -> DrawResult
where
    Y: Ranged<ValueType = f64>,
{
    let points = points.iter().copied();
    match kind {
        Marker::Circle => chart.draw_series(points.map(|at| Circle::new(at, 4, style)))?,
        Marker::Triangle => {
            chart.draw_series(points.map(|at| TriangleMarker::new(at, 5, style)))?
        }
        Marker::Square => chart.draw_series(
            points.map(|at| EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], style)),
        )?,
        Marker::Cross => chart.draw_series(points.map(|at| Cross::new(at, 4, style)))?,
    };
    Ok(())
}

/// Draws a marker at a pixel position of `area`.
pub(super) fn draw_marker_at(
    area: &Area<'_>,
    kind: Marker,
    at: (i32, i32),
    style: ShapeStyle,
) -> DrawResult {
    match kind {
        Marker::Circle => area.draw(&Circle::new(at, 4, style)),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, 5, style)),
        Marker::Square => {
            area.draw(&(EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], style)))
        }
        Marker::Cross => area.draw(&Cross::new(at, 4, style)),
    }
}

pub(super) fn text_style(size: u32, color: &RGBColor) -> TextStyle<'_> {
    TextStyle::from((FONT, size).into_font()).color(color)
}

/// Renders into an SVG string of `size` on a white background (GitHub's light theme shows it as
/// is; on a dark theme the white card stays readable).
pub(super) fn render(
    chart: &'static str,
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> DrawResult,
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present());
        drawn.map_err(|source| ChartError::Draw { chart, source })?;
    }
    Ok(svg)
}

/// Draws the title and the subtitle lines and returns the area below them.
pub(super) fn heading<'a>(
    root: &Area<'a>,
    title: &str,
    subtitle: &[String],
) -> Result<Area<'a>, DrawingAreaErrorKind<std::io::Error>> {
    root.draw(&Text::new(title.to_owned(), (16, 12), text_style(20, &INK)))?;
    for (i, line) in subtitle.iter().enumerate() {
        root.draw(&Text::new(
            line.clone(),
            (16, 40 + 18 * i as i32),
            text_style(13, &MUTED),
        ))?;
    }
    let height = 46 + 18 * subtitle.len() as u32;
    Ok(root.split_vertically(height).1)
}

/// What a legend row shows before its text.
#[derive(Clone, Debug)]
pub(super) enum Swatch {
    /// No swatch: a heading or a continuation line.
    None,
    /// A line sample, dashed or not, with a marker in its middle.
    Line {
        color: RGBColor,
        stroke: u32,
        dashed: bool,
        marker: Option<(Marker, bool)>,
    },
    /// A marker alone; `true` when filled.
    Marker(Marker, RGBColor, bool),
}

#[derive(Clone, Debug)]
pub(super) struct LegendRow {
    pub(super) swatch: Swatch,
    pub(super) text: String,
    pub(super) heading: bool,
}

impl LegendRow {
    pub(super) fn heading(text: impl Into<String>) -> Self {
        Self {
            swatch: Swatch::None,
            text: text.into(),
            heading: true,
        }
    }

    pub(super) fn line(
        text: impl Into<String>,
        color: RGBColor,
        stroke: u32,
        dashed: bool,
    ) -> Self {
        Self {
            swatch: Swatch::Line {
                color,
                stroke,
                dashed,
                marker: None,
            },
            text: text.into(),
            heading: false,
        }
    }

    pub(super) fn with_marker(mut self, kind: Marker, filled: bool) -> Self {
        if let Swatch::Line { marker, .. } = &mut self.swatch {
            *marker = Some((kind, filled));
        }
        self
    }

    pub(super) fn marker(
        text: impl Into<String>,
        kind: Marker,
        color: RGBColor,
        filled: bool,
    ) -> Self {
        Self {
            swatch: Swatch::Marker(kind, color, filled),
            text: text.into(),
            heading: false,
        }
    }

    pub(super) fn note(text: impl Into<String>) -> Self {
        Self {
            swatch: Swatch::None,
            text: text.into(),
            heading: false,
        }
    }
}

/// Draws `rows` top-down in `area` (pixel coordinates).
pub(super) fn draw_legend(area: &Area<'_>, rows: &[LegendRow]) -> DrawResult {
    let mut y = 16;
    for row in rows {
        if row.heading && y > 16 {
            y += 8;
        }
        match &row.swatch {
            Swatch::None => {}
            Swatch::Line {
                color,
                stroke,
                dashed,
                marker: m,
            } => {
                let style = color.stroke_width(*stroke);
                if *dashed {
                    area.draw(&DashedPathElement::new(vec![(8, y), (40, y)], 5, 3, style))?;
                } else {
                    area.draw(&PathElement::new(vec![(8, y), (40, y)], style))?;
                }
                if let Some((kind, filled)) = m {
                    let style = if *filled {
                        color.filled()
                    } else {
                        color.stroke_width(2)
                    };
                    draw_marker_at(area, *kind, (24, y), style)?;
                }
            }
            Swatch::Marker(kind, color, filled) => {
                let style = if *filled {
                    color.filled()
                } else {
                    color.stroke_width(2)
                };
                draw_marker_at(area, *kind, (24, y), style)?;
            }
        }
        let x = if matches!(row.swatch, Swatch::None) && row.heading {
            8
        } else {
            48
        };
        let style = if row.heading {
            TextStyle::from((FONT, 13, FontStyle::Bold).into_font()).color(&INK)
        } else {
            text_style(12, &INK)
        };
        area.draw(&Text::new(
            row.text.clone(),
            (x, y),
            style.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        y += 19;
    }
    Ok(())
}

/// A chart of linear axes `x` by `y` on `area`, with the mesh, labels and axis descriptions every
/// linear chart here draws (the soak's panels, the history).
pub(super) fn linear_chart<'a, 'b>(
    area: &'a Area<'b>,
    (x, y): (Range<f64>, Range<f64>),
    (x_desc, y_desc): (&str, &str),
) -> Result<
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    DrawingAreaErrorKind<std::io::Error>,
> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_right(20)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&axis_number)
        .y_label_formatter(&axis_number)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .max_light_lines(2)
        .light_line_style(RGBColor(0, 0, 0).mix(0.04))
        .draw()?;
    Ok(chart)
}

/// Axis numbers without trailing zeros: `0.25`, `2.5`, `40`.
pub(super) fn axis_number(v: &f64) -> String {
    let text = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// `0..max` padded by 8% (at least `0..1`).
pub(super) fn zero_to(max: f64) -> Range<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    };
    0.0..max
}

impl RampView {
    /// The label of the knee line: a knee only when something above it broke.
    pub(super) fn knee_label(&self, knee: f64, prefix: &str) -> String {
        if self.broke {
            format!("{prefix}knee {} req/s", format_rate(knee))
        } else {
            format!(
                "{prefix}held through {} req/s, nothing broke",
                format_rate(knee)
            )
        }
    }
}

/// The vertical lines of the head's and the base's knees with their labels at the top, in a
/// chart's data coordinates. A label near the right edge is written to the left of its line.
pub(super) fn draw_knees<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    head: &RampView,
    base: Option<&RampView>,
) -> DrawResult
where
    Y: Ranged<ValueType = f64>,
{
    let knees = [
        head.knee.map(|k| (k, head.knee_label(k, ""), KNEE_COLOR)),
        base.and_then(|b| b.knee.map(|k| (k, b.knee_label(k, "base "), MUTED))),
    ];
    for (row, (at, label, color)) in knees.into_iter().flatten().enumerate() {
        let y = chart.y_range().end;
        draw_vertical(chart, at, (6, 4), color, label, (y, 6 + 16 * row as i32))?;
    }
    Ok(())
}

/// A vertical dashed line at `at` (`dash`: on and off lengths) in `color`, with `label` written
/// at `label_at` (a y in data coordinates and a pixel offset below it); a label near the right
/// edge is written to the left of its line.
fn draw_vertical<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    at: f64,
    dash: (u32, u32),
    color: RGBColor,
    label: String,
    label_at: (f64, i32),
) -> DrawResult
where
    Y: Ranged<ValueType = f64>,
{
    let (x, y) = (chart.x_range(), chart.y_range());
    chart.draw_series(DashedLineSeries::new(
        vec![(at, y.start), (at, y.end)],
        dash.0,
        dash.1,
        color.stroke_width(2),
    ))?;
    let right_half = at > x.start + (x.end - x.start) * 0.6;
    let (dx, anchor) = if right_half {
        (-6, HPos::Right)
    } else {
        (6, HPos::Left)
    };
    chart.draw_series(std::iter::once(
        EmptyElement::at((at, label_at.0))
            + Text::new(
                label,
                (dx, label_at.1),
                TextStyle::from((FONT, 13).into_font())
                    .color(&color)
                    .pos(Pos::new(anchor, VPos::Top)),
            ),
    ))?;
    Ok(())
}

/// The vertical line of the production load at `at`, labelled at the bottom (the knees' labels
/// are at the top), in a chart's data coordinates.
pub(super) fn draw_production<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    at: f64,
    label: &str,
) -> DrawResult
where
    Y: Ranged<ValueType = f64>,
{
    let y = chart.y_range().start;
    draw_vertical(
        chart,
        at,
        (2, 3),
        PRODUCTION_COLOR,
        label.to_owned(),
        (y, -20),
    )
}

/// The legend row of the head's knee line.
pub(super) fn knee_legend(head: &RampView) -> Option<LegendRow> {
    let text = if head.broke {
        "knee: highest load that held"
    } else {
        "highest step (nothing broke)"
    };
    head.knee
        .map(|_| LegendRow::line(text, KNEE_COLOR, 2, true))
}
