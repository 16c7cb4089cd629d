//! SVG charts of a run (issue #6): latency percentiles and throughput against offered load with
//! the knee marked, and the soak's RSS and p99 series with their Theil–Sen slopes.
//!
//! They read the run result in its JSON form, as written to the out-dir or as stored in a
//! baseline, so any result on disk can be drawn (and an older or partial one draws what it has).
//! Like the other reporters they compute nothing the run did not measure, except what a chart
//! needs to draw a stored figure: the p90 of each step is read from the step's stored latency
//! histogram (the step records keep p50, p95, p99 and max), the goodput rate is the phase's
//! goodput count over its measured time, and a stored slope gets its Theil–Sen intercept (the
//! median of y − slope·x over the plotted points) so it can be drawn as a line.
//!
//! Drawn with plotters' SVG backend, which writes `<text>` elements and needs no font files.

use crate::measure::LatencyHistogram;
use crate::plan::{format_bytes_per_sec, format_latency, format_rate};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file name of the latency chart.
pub const LATENCY_CHART: &str = "latency.svg";
/// The file name of the throughput chart.
pub const THROUGHPUT_CHART: &str = "throughput.svg";
/// The file name of the soak chart.
pub const SOAK_CHART: &str = "soak.svg";

/// Why a chart could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// plotters failed while drawing into the SVG string.
    #[error("failed to draw {chart}")]
    Draw {
        /// The chart's file name.
        chart: &'static str,
        /// The cause.
        #[source]
        source: DrawingAreaErrorKind<std::io::Error>,
    },
    /// The chart or its directory could not be written, or a stale chart removed.
    #[error("failed to write chart {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Writes the run's charts into `dir` and returns their paths.
///
/// `latency.svg` and `throughput.svg` are written when the run has ramp steps, `soak.svg` when it
/// has a soak; `base`, the baseline's stored result, is drawn dashed beside the head in the first
/// two. A chart that has nothing to draw is not written, and one left in `dir` by an earlier run
/// is removed, so the directory never shows another run's chart beside this run's result.
pub fn write_charts(
    dir: &Path,
    head: &Value,
    base: Option<&Value>,
) -> Result<Vec<PathBuf>, ChartError> {
    std::fs::create_dir_all(dir).map_err(|source| ChartError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let charts = [
        (LATENCY_CHART, render_latency(head, base)?),
        (THROUGHPUT_CHART, render_throughput(head, base)?),
        (SOAK_CHART, render_soak(head)?),
    ];
    let mut written = Vec::new();
    for (name, svg) in charts {
        let path = dir.join(name);
        match svg {
            Some(svg) => {
                write_atomic(&path, svg.as_bytes())?;
                written.push(path);
            }
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(ChartError::Write { path, source: e });
                }
                _ => {}
            },
        }
    }
    Ok(written)
}

/// Writes `bytes` to `path` through a temporary file in the same directory, so a reader never
/// sees half a chart.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ChartError> {
    // Readable like any file the user writes (0644 minus the umask), not 0600 like a temporary
    // file: charts are meant to be published as CI artifacts.
    crate::result::write_file_atomic(path, bytes).map_err(|source| ChartError::Write {
        path: path.to_owned(),
        source,
    })
}

// ---------------------------------------------------------------------------------------------
// What the charts read from a result.

/// A latency percentile drawn per operation class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Percentile {
    P50,
    P90,
    P99,
    Max,
}

impl Percentile {
    const ALL: [Percentile; 4] = [Self::P50, Self::P90, Self::P99, Self::Max];

    fn label(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P90 => "p90",
            Self::P99 => "p99",
            Self::Max => "max",
        }
    }

    fn marker(self) -> Marker {
        match self {
            Self::P50 => Marker::Circle,
            Self::P90 => Marker::Triangle,
            Self::P99 => Marker::Square,
            Self::Max => Marker::Cross,
        }
    }

    /// The p99 is the SLO's percentile, so it is drawn heaviest; p90 and max lightest, to keep
    /// four lines per class apart.
    fn stroke(self) -> u32 {
        match self {
            Self::P50 => 2,
            Self::P99 => 3,
            Self::P90 | Self::Max => 1,
        }
    }
}

/// One operation class at one step, in milliseconds from the intended send time.
#[derive(Clone, Debug, PartialEq)]
struct ClassLatency {
    name: String,
    p50: f64,
    /// From the step's latency histogram; `None` when the phase or its histogram is missing.
    p90: Option<f64>,
    p99: f64,
    max: f64,
    /// Whether the SLO judged it: a class with fewer than `slo.min-requests` requests in the
    /// step is listed in the step's `held.unjudged` and drawn hollow.
    judged: bool,
}

impl ClassLatency {
    fn get(&self, p: Percentile) -> Option<f64> {
        match p {
            Percentile::P50 => Some(self.p50),
            Percentile::P90 => self.p90,
            Percentile::P99 => Some(self.p99),
            Percentile::Max => Some(self.max),
        }
    }
}

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepState {
    Held,
    Broke,
    /// Too few requests, even all classes pooled, to judge the SLO (`held.basis`).
    TooFew,
    Invalid,
}

/// One ramp step or bisection point.
#[derive(Clone, Debug, PartialEq)]
struct StepPoint {
    /// The offered request rate: measured when recorded, else the model's.
    offered: f64,
    /// The stored achieved rate: answers per second of measured time (requests sent per second in
    /// results written before answers were counted, see [`RampView::achieved_is_answers`]).
    achieved: Option<f64>,
    /// Correct answers within the SLO latency per second of measured time, from the phase's
    /// counters.
    goodput: Option<f64>,
    state: StepState,
    classes: Vec<ClassLatency>,
}

/// A latency limit of the SLO: its percentile's label (`p99`) and the limit in milliseconds.
#[derive(Clone, Debug, PartialEq)]
struct SloLimit {
    label: String,
    ms: f64,
}

/// What the ramp charts read of one result.
#[derive(Clone, Debug, PartialEq)]
struct RampView {
    /// `head 3f2a91c`, `base 1b2c3d4`.
    name: String,
    /// In offered order.
    steps: Vec<StepPoint>,
    /// The highest offered request rate that held.
    knee: Option<f64>,
    /// Whether a rate above the knee broke: without one the knee is only the highest step.
    broke: bool,
    slo: Vec<SloLimit>,
    /// Whether the steps' achieved rate counts answers. Results written before answers were
    /// counted (their windows lack `answered`) stored requests sent per second there instead.
    achieved_is_answers: bool,
}

/// `3f2a91c` (with `, dirty`) of the result's commit, or `None` outside git.
fn short_commit(result: &Value) -> Option<String> {
    let commit = result["git"]["commit"].as_str()?;
    let short: String = commit.chars().take(7).collect();
    Some(if result["git"]["dirty"].as_bool() == Some(true) {
        format!("{short}, dirty")
    } else {
        short
    })
}

/// `Head 3f2a91c, profile ci.`: the subtitle's line naming the measured run.
fn run_line(name: &str, result: &Value) -> String {
    match result["profile"].as_str() {
        Some(profile) => format!("{name}, profile {profile}."),
        None => format!("{name}."),
    }
}

fn run_name(role: &str, result: &Value) -> String {
    match short_commit(result) {
        Some(commit) => format!("{role} {commit}"),
        None => role.to_owned(),
    }
}

/// A finite, non-negative number.
fn number(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite() && *x >= 0.0)
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// The p90 in milliseconds of `class` in a phase record, from its stored histogram.
fn histogram_p90(phase: Option<&Value>, class: &str) -> Option<f64> {
    let op = array(&phase?["operations"])
        .iter()
        .find(|o| o["name"].as_str() == Some(class))?;
    let histogram = LatencyHistogram::decode(op["latency"].as_str()?).ok()?;
    (!histogram.is_empty()).then(|| histogram.quantile(0.9).as_secs_f64() * 1e3)
}

/// Correct answers within the SLO latency per second of measured time, summed over the
/// operations of a phase record.
fn goodput_rate(phase: Option<&Value>) -> Option<f64> {
    let phase = phase?;
    let secs = number(&phase["measured_ms"])? / 1e3;
    let counts: Vec<u64> = array(&phase["operations"])
        .iter()
        .filter_map(|op| op["counters"]["goodput"].as_u64())
        .collect();
    (secs > 0.0 && !counts.is_empty()).then(|| counts.iter().sum::<u64>() as f64 / secs)
}

fn ramp_view(role: &str, result: &Value) -> RampView {
    let ramp = &result["ramp"];
    let mut steps: Vec<StepPoint> = array(&ramp["steps"])
        .iter()
        .filter_map(|step| {
            let offered = number(&step["offered_rate_per_sec"])
                .filter(|r| *r > 0.0)
                .or_else(|| number(&step["model_rate_per_sec"]))?;
            let phase = step["phase"].as_str();
            let record = array(&result["phases"])
                .iter()
                .find(|p| phase.is_some() && p["name"].as_str() == phase);
            let state = if step["valid"].as_bool() == Some(false) {
                StepState::Invalid
            } else if step["held"]["holds"].as_bool() == Some(true) {
                StepState::Held
            } else if step["aborted"].is_null()
                && step["held"]["basis"].as_str() == Some("too-few-requests")
            {
                StepState::TooFew
            } else {
                StepState::Broke
            };
            let unjudged = array(&step["held"]["unjudged"]);
            let classes = array(&step["operations"])
                .iter()
                .filter(|op| op["requests"].as_u64().is_some_and(|n| n > 0))
                .filter_map(|op| {
                    let name = op["name"].as_str()?.to_owned();
                    Some(ClassLatency {
                        p90: histogram_p90(record, &name),
                        p50: number(&op["p50_ms"])?,
                        p99: number(&op["p99_ms"])?,
                        max: number(&op["max_ms"])?,
                        judged: !unjudged.iter().any(|u| u.as_str() == Some(&name)),
                        name,
                    })
                })
                .collect();
            Some(StepPoint {
                offered,
                achieved: number(&step["achieved_rate_per_sec"]),
                goodput: goodput_rate(record),
                state,
                classes,
            })
        })
        .collect();
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let slo = recorded_slo(result).unwrap_or_else(|| slo_from_reasons(ramp));
    RampView {
        name: run_name(role, result),
        steps,
        knee: number(&ramp["knee_rate_per_sec"]),
        broke: ramp["lowest_break"].is_object(),
        slo,
        achieved_is_answers: counts_answers(result),
    }
}

/// Whether `result` was written when a step's achieved rate counted answers: its windows record
/// `answered` (older results stored requests sent per second as the achieved rate).
fn counts_answers(result: &Value) -> bool {
    array(&result["phases"])
        .iter()
        .flat_map(|p| array(&p["windows"]["windows"]))
        .any(|w| w.get("answered").is_some())
}

/// The latency limits of the `[slo]` the result records, `None` when it records none (results
/// written before the SLO was recorded).
fn recorded_slo(result: &Value) -> Option<Vec<SloLimit>> {
    let latency = result["slo"]["latency"].as_array()?;
    Some(
        latency
            .iter()
            .filter_map(|limit| {
                Some(SloLimit {
                    label: limit["label"].as_str()?.to_owned(),
                    ms: number(&limit["limit_ms"]).filter(|ms| *ms > 0.0)?,
                })
            })
            .collect(),
    )
}

/// The latency limits named in the ramp's break reasons: the fallback for results written before
/// the SLO was recorded, where a limit is known only from a step that broke on it.
fn slo_from_reasons(ramp: &Value) -> Vec<SloLimit> {
    let reasons = array(&ramp["steps"])
        .iter()
        .flat_map(|s| array(&s["held"]["reasons"]))
        .chain(array(&ramp["first_break"]["reasons"]))
        .chain(array(&ramp["lowest_break"]["reasons"]))
        .filter_map(Value::as_str);
    let mut slo: Vec<SloLimit> = Vec::new();
    for limit in reasons.filter_map(parse_slo_reason) {
        if !slo.iter().any(|s| s.label == limit.label) {
            slo.push(limit);
        }
    }
    slo
}

/// The SLO limit in a step's break reason, e.g. "`login` p99 340 ms > 200 ms" (or "all classes
/// pooled p99 340 ms > 200 ms") → p99, 200 ms. The plan writes these reasons with
/// `format_latency`, which this reads back.
fn parse_slo_reason(reason: &str) -> Option<SloLimit> {
    let rest = match reason.strip_prefix('`') {
        Some(quoted) => quoted.split_once("` ")?.1,
        None => reason.strip_prefix("all classes pooled ")?,
    };
    let mut words = rest.split_whitespace();
    let label = words.next()?;
    let is_percentile = label
        .strip_prefix('p')
        .is_some_and(|q| q.parse::<f64>().is_ok());
    if !is_percentile {
        return None;
    }
    let (_measured, _unit, gt) = (words.next()?, words.next()?, words.next()?);
    if gt != ">" {
        return None;
    }
    let value: f64 = words.next()?.parse().ok()?;
    let ms = match words.next()? {
        "ms" => value,
        "s" => value * 1e3,
        _ => return None,
    };
    (ms.is_finite() && ms > 0.0).then(|| SloLimit {
        label: label.to_owned(),
        ms,
    })
}

/// The soak's slope with its interval, as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
struct StoredSlope {
    estimate: f64,
    low: f64,
    high: f64,
}

fn stored_slope(v: &Value) -> Option<StoredSlope> {
    let get = |key: &str| v[key].as_f64().filter(|x| x.is_finite());
    Some(StoredSlope {
        estimate: get("estimate")?,
        low: get("low")?,
        high: get("high")?,
    })
}

/// What the soak chart reads of one result.
#[derive(Clone, Debug, PartialEq)]
struct SoakView {
    /// (seconds into the soak's measured part, MiB).
    rss: Vec<(f64, f64)>,
    /// (middle of the window in seconds into the measured part, p99 in ms).
    p99: Vec<(f64, f64)>,
    /// Bytes per second.
    rss_slope: Option<StoredSlope>,
    /// Seconds per second.
    p99_slope: Option<StoredSlope>,
    offered: Option<f64>,
    /// `soak.at` as a share of the capacity.
    share: Option<f64>,
    /// Leak finding, abort and invalidity, for the subtitle.
    notes: Vec<String>,
}

const MIB: f64 = 1024.0 * 1024.0;

/// The soak of `result`, or `None` when it has none.
///
/// The p99 series is the soak phase's windows in which something completed (the series the
/// p99 slope was fitted to). Resource samples carry no phase; as in the comparison
/// (`compare::RunFigures`), the soak's are the samples of the run's last `measured` seconds when
/// the soak is the run's last phase, so the RSS series is aligned on the end of the soak.
fn soak_view(result: &Value) -> Option<SoakView> {
    let soak = &result["soak"];
    if !soak.is_object() {
        return None;
    }
    let phases = array(&result["phases"]);
    let name = soak["phase"].as_str().unwrap_or("soak");
    let index = phases.iter().position(|p| p["name"].as_str() == Some(name));
    let phase = index.map(|i| &phases[i]);
    let p99 = phase
        .map(|p| array(&p["windows"]["windows"]))
        .unwrap_or_default()
        .iter()
        .filter(|w| w["completed"].as_u64().is_some_and(|n| n > 0))
        .filter_map(|w| {
            let middle = number(&w["start_ms"])? + number(&w["length_ms"])? / 2.0;
            Some((middle / 1e3, number(&w["p99_ms"])?))
        })
        .collect();
    let samples: Vec<(f64, f64)> = array(&result["resources"])
        .iter()
        .filter_map(|s| Some((number(&s["elapsed_s"])?, number(&s["rss_bytes"])?)))
        .collect();
    let measured = phase
        .and_then(|p| number(&p["measured_ms"]))
        .map(|ms| ms / 1e3);
    let is_last = index.is_some_and(|i| i + 1 == phases.len());
    let rss = match (measured, samples.last()) {
        (Some(measured), Some(&(end, _))) if is_last => {
            let from = end - measured;
            samples
                .iter()
                .filter(|(t, _)| *t >= from)
                .map(|(t, b)| (t - from, b / MIB))
                .collect()
        }
        _ => Vec::new(),
    };
    let mut notes = Vec::new();
    if let Some(leak) = soak["leak"].as_str() {
        notes.push(format!("leak: {leak}"));
    }
    if let Some(aborted) = soak["aborted"].as_str() {
        notes.push(format!("aborted: {aborted}"));
    }
    if soak["valid"].as_bool() == Some(false) {
        notes.push("invalid: the generator could not keep its schedule".to_owned());
    }
    let share = match (
        number(&soak["at_sessions_per_sec"]),
        number(&soak["capacity_sessions_per_sec"]),
    ) {
        (Some(at), Some(capacity)) if capacity > 0.0 => Some(at / capacity),
        _ => None,
    };
    Some(SoakView {
        rss,
        p99,
        rss_slope: stored_slope(&soak["slopes"]["rss_bytes_per_sec"]),
        p99_slope: stored_slope(&soak["slopes"]["p99_seconds_per_sec"]),
        offered: number(&soak["offered_rate_per_sec"]),
        share,
        notes,
    })
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// The Theil–Sen intercept of `points` for `slope`: the median of y − slope·x.
fn theil_sen_intercept(points: &[(f64, f64)], slope: f64) -> Option<f64> {
    median(points.iter().map(|(x, y)| y - slope * x).collect())
}

// ---------------------------------------------------------------------------------------------
// Drawing helpers.

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Operation classes, in the order they first appear; chosen to stay apart on white and from
/// the SLO's red.
const PALETTE: [RGBColor; 9] = [
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
const SLO_COLOR: RGBColor = RGBColor(178, 34, 34);
const KNEE_COLOR: RGBColor = RGBColor(0, 0, 0);
const INK: RGBColor = RGBColor(36, 41, 47);
const MUTED: RGBColor = RGBColor(87, 96, 106);
/// The fitted slope in the soak chart.
const FIT_COLOR: RGBColor = RGBColor(214, 39, 40);
const SERIES_COLOR: RGBColor = RGBColor(31, 119, 180);
/// Goodput in the throughput chart.
const GOODPUT_COLOR: RGBColor = RGBColor(44, 160, 44);

const WIDTH: u32 = 1000;
const LEGEND_WIDTH: u32 = 230;
const FONT: &str = "sans-serif";

/// `color` mixed with white: the base's lines.
fn lighter(color: RGBColor) -> RGBColor {
    let mix = |c: u8| (f64::from(c) + (255.0 - f64::from(c)) * 0.5).round() as u8;
    RGBColor(mix(color.0), mix(color.1), mix(color.2))
}

fn class_color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// A marker drawn at a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

/// Draws a marker at each of `points` in a chart's data coordinates.
fn draw_markers<Y>(
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
fn draw_marker_at(area: &Area<'_>, kind: Marker, at: (i32, i32), style: ShapeStyle) -> DrawResult {
    match kind {
        Marker::Circle => area.draw(&Circle::new(at, 4, style)),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, 5, style)),
        Marker::Square => {
            area.draw(&(EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], style)))
        }
        Marker::Cross => area.draw(&Cross::new(at, 4, style)),
    }
}

fn text_style(size: u32, color: &RGBColor) -> TextStyle<'_> {
    TextStyle::from((FONT, size).into_font()).color(color)
}

/// Renders into an SVG string of `size` on a white background (GitHub's light theme shows it as
/// is; on a dark theme the white card stays readable).
fn render(
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
fn heading<'a>(
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
enum Swatch {
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
struct LegendRow {
    swatch: Swatch,
    text: String,
    heading: bool,
}

impl LegendRow {
    fn heading(text: impl Into<String>) -> Self {
        Self {
            swatch: Swatch::None,
            text: text.into(),
            heading: true,
        }
    }

    fn line(text: impl Into<String>, color: RGBColor, stroke: u32, dashed: bool) -> Self {
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

    fn with_marker(mut self, kind: Marker, filled: bool) -> Self {
        if let Swatch::Line { marker, .. } = &mut self.swatch {
            *marker = Some((kind, filled));
        }
        self
    }

    fn marker(text: impl Into<String>, kind: Marker, color: RGBColor, filled: bool) -> Self {
        Self {
            swatch: Swatch::Marker(kind, color, filled),
            text: text.into(),
            heading: false,
        }
    }

    fn note(text: impl Into<String>) -> Self {
        Self {
            swatch: Swatch::None,
            text: text.into(),
            heading: false,
        }
    }
}

/// Draws `rows` top-down in `area` (pixel coordinates).
fn draw_legend(area: &Area<'_>, rows: &[LegendRow]) -> DrawResult {
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

/// Axis numbers without trailing zeros: `0.25`, `2.5`, `40`.
fn axis_number(v: &f64) -> String {
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
fn zero_to(max: f64) -> Range<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    };
    0.0..max
}

impl RampView {
    /// The label of the knee line: a knee only when something above it broke.
    fn knee_label(&self, knee: f64, prefix: &str) -> String {
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
fn draw_knees<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    head: &RampView,
    base: Option<&RampView>,
) -> DrawResult
where
    Y: Ranged<ValueType = f64>,
{
    let (x, y) = (chart.x_range(), chart.y_range());
    let knees = [
        head.knee.map(|k| (k, head.knee_label(k, ""), KNEE_COLOR)),
        base.and_then(|b| b.knee.map(|k| (k, b.knee_label(k, "base "), MUTED))),
    ];
    for (row, (at, label, color)) in knees.into_iter().flatten().enumerate() {
        chart.draw_series(DashedLineSeries::new(
            vec![(at, y.start), (at, y.end)],
            6,
            4,
            color.stroke_width(2),
        ))?;
        let right_half = at > x.start + (x.end - x.start) * 0.6;
        let (dx, anchor) = if right_half {
            (-6, HPos::Right)
        } else {
            (6, HPos::Left)
        };
        chart.draw_series(std::iter::once(
            EmptyElement::at((at, y.end))
                + Text::new(
                    label,
                    (dx, 6 + 16 * row as i32),
                    TextStyle::from((FONT, 13).into_font())
                        .color(&color)
                        .pos(Pos::new(anchor, VPos::Top)),
                ),
        ))?;
    }
    Ok(())
}

/// The legend row of the head's knee line.
fn knee_legend(head: &RampView) -> Option<LegendRow> {
    let text = if head.broke {
        "knee: highest load that held"
    } else {
        "highest step (nothing broke)"
    };
    head.knee
        .map(|_| LegendRow::line(text, KNEE_COLOR, 2, true))
}

// ---------------------------------------------------------------------------------------------
// Latency against offered load.

/// Renders `latency.svg`: latency percentiles (p50, p90, p99, max, from the intended send time)
/// of each operation class against the offered load of each ramp step, with the SLO's latency
/// limits, the knee, and `base` dashed and lighter when given. The y-axis is logarithmic when the
/// values span more than two decades. `None` when the run has no ramp step with a request.
pub fn render_latency(head: &Value, base: Option<&Value>) -> Result<Option<String>, ChartError> {
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
        subtitle.push(if head_result["slo"].is_object() {
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
struct LatencyData<'a> {
    head: &'a RampView,
    base: Option<&'a RampView>,
    classes: &'a [String],
    slo: &'a [SloLimit],
    log: bool,
}

fn draw_latency_plot<Y>(plot: &Area<'_>, x: Range<f64>, y: Y, data: &LatencyData<'_>) -> DrawResult
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
fn format_ms(ms: f64) -> String {
    Duration::try_from_secs_f64(ms / 1e3).map_or_else(|_| format!("{ms} ms"), format_latency)
}

fn latency_legend(data: &LatencyData<'_>) -> Vec<LegendRow> {
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

// ---------------------------------------------------------------------------------------------
// Throughput against offered load.

/// Renders `throughput.svg`: at each ramp step (in offered order), the achieved rate (answers
/// per second; requests sent per second in results written before answers were counted) and the
/// goodput (correct answers within the SLO latency per second, from the phase's
/// counters) against the offered request rate, with the y = x line of a service that keeps up,
/// the knee, and `base` dashed and lighter when given. Filled points held the SLO, hollow ones
/// broke it, crosses were invalid. `None` when the run has no ramp step.
pub fn render_throughput(head: &Value, base: Option<&Value>) -> Result<Option<String>, ChartError> {
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
        draw_legend(&legend, &rows)
    })?;
    Ok(Some(svg))
}

// ---------------------------------------------------------------------------------------------
// The soak.

/// Renders `soak.svg`: the target's RSS (MiB, one sample a second) and the p99 latency of each
/// window (ms, from the intended send time) over the soak's measured part, each with its stored
/// Theil–Sen slope drawn as a line through the Theil–Sen intercept. `None` when the run has no
/// soak, or a soak with neither series.
pub fn render_soak(head: &Value) -> Result<Option<String>, ChartError> {
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
                y_desc: "RSS (MiB)",
                series: "RSS, 1 s samples",
                zero_based: false,
                fit: rss_fit,
            },
        ),
        (
            soak.p99.as_slice(),
            SoakPanel {
                y_desc: "p99 latency (ms)",
                series: "p99 per 1 s window",
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
fn signed(text: &str) -> String {
    if text.starts_with('-') {
        text.to_owned()
    } else {
        format!("+{text}")
    }
}

/// One panel of the soak chart.
struct SoakPanel {
    y_desc: &'static str,
    series: &'static str,
    /// Whether the y-axis starts at zero (latency) or hugs the data (RSS, whose growth matters).
    zero_based: bool,
    /// The slope in y-units per second, and its legend lines.
    fit: Option<(f64, Vec<String>)>,
}

fn draw_soak_panel(
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
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .margin_right(20)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc("time into the soak's measured part (s)")
        .y_desc(panel.y_desc)
        .x_label_formatter(&axis_number)
        .y_label_formatter(&axis_number)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .max_light_lines(2)
        .light_line_style(RGBColor(0, 0, 0).mix(0.04))
        .draw()?;
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
        LegendRow::line(panel.series, SERIES_COLOR, 2, false).with_marker(Marker::Circle, true),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashSet;

    const CLASSES: [&str; 3] = ["landing", "login", "transfer"];

    fn histogram(ms: &[f64]) -> String {
        let mut h = LatencyHistogram::new();
        for v in ms {
            h.record(Duration::from_secs_f64(v / 1e3));
        }
        h.encode()
    }

    /// A result shaped like a real `ci` run: five steps (the last broke on p99), a bisection
    /// point, a soak with windows and resource samples.
    fn result(commit: &str, slowdown: f64, soak: bool) -> Value {
        let fractions = [0.25, 0.5, 0.75, 1.0, 1.5];
        let mut steps = Vec::new();
        let mut phases = Vec::new();
        let mut points: Vec<(String, f64, bool)> = fractions
            .iter()
            .map(|f| (format!("ramp-{:.0}%", f * 100.0), *f, true))
            .collect();
        points.push(("refine-1".to_owned(), 1.25, false));
        for (phase, fraction, is_step) in points {
            // A slower service is offered the same sessions but completes them later.
            let offered = 180.0 * fraction / slowdown;
            let broke = fraction > 1.1;
            let load = fraction * slowdown;
            let operations: Vec<Value> = CLASSES
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let base = (1.0 + i as f64) * load;
                    let p99 = if broke { 260.0 * load } else { base * 12.0 };
                    json!({
                        "name": name, "requests": 200, "errors": 0, "wrong_answers": 0,
                        "p50_ms": base, "p95_ms": base * 6.0, "p99_ms": p99, "max_ms": p99 * 1.5,
                    })
                })
                .collect();
            let reasons: Vec<String> = if broke {
                vec![format!(
                    "`landing` p99 {} > 200 ms",
                    format_ms(260.0 * load)
                )]
            } else {
                Vec::new()
            };
            steps.push(json!({
                "phase": phase, "kind": if is_step { "step" } else { "refine" },
                "fraction": fraction, "sessions_per_sec": 45.0 * fraction,
                "offered_rate_per_sec": offered, "model_rate_per_sec": 200.0 * fraction,
                "achieved_rate_per_sec": if broke { offered * 0.8 } else { offered },
                "held": {"holds": !broke, "reasons": reasons, "unjudged": []},
                "valid": true, "invalid_reasons": [], "aborted": null,
                "operations": operations, "lag_p99_ms": 0.5, "dropped": 0,
            }));
            phases.push(json!({
                "name": phase,
                "operations": CLASSES.iter().enumerate().map(|(i, name)| json!({
                    "name": name,
                    // Four seconds of the class's third of the load; past the knee half of it
                    // answered within the SLO latency.
                    "counters": {"goodput": (offered * 4.0 / 3.0 * if broke { 0.5 } else { 1.0 }) as u64},
                    "latency": histogram(&(1..=100).map(|k| f64::from(k) * 0.1 * (1.0 + i as f64) * load).collect::<Vec<_>>()),
                })).collect::<Vec<_>>(),
                "measured_ms": 4000.0,
                "windows": {"window_ms": 1000.0, "windows": []},
            }));
        }
        let mut result = json!({
            "format_version": 1,
            "git": {"commit": commit, "dirty": false},
            "profile": "ci",
            "ramp": {
                "steps": steps, "knee_rate_per_sec": 180.0 / slowdown, "knee_sessions_per_sec": 45.0,
                "first_break": {"phase": "ramp-150%", "sessions_per_sec": 67.5, "offered_rate_per_sec": 270.0, "reasons": []},
                "lowest_break": {"phase": "refine-1", "sessions_per_sec": 56.25, "offered_rate_per_sec": 225.0, "reasons": []},
                "sentence": "", "failing_from_first_step": [],
                "valid": true,
            },
            "soak": null,
            "phases": phases,
            "resources": [],
        });
        if soak {
            let windows: Vec<Value> = (0..20)
                .map(|i| {
                    json!({
                        "start_ms": f64::from(i) * 1000.0, "length_ms": 1000.0, "sent": 100,
                        "completed": 100, "errors": 0, "p50_ms": 1.0,
                        "p99_ms": 8.0 + f64::from(i % 4) + 0.2 * f64::from(i), "max_ms": 30.0,
                    })
                })
                .collect();
            result["phases"].as_array_mut().unwrap().push(json!({
                "name": "soak", "operations": [], "measured_ms": 20000.0,
                "windows": {"window_ms": 1000.0, "windows": windows},
            }));
            result["resources"] = (0..60)
                .map(|i| json!({
                    "elapsed_s": f64::from(i) + 0.001, "cpu_seconds": 0.0,
                    "rss_bytes": 4_000_000 + 30_000 * i + 7_000 * (i % 3), "threads": 2, "fds": 12,
                }))
                .collect::<Vec<_>>()
                .into();
            result["soak"] = json!({
                "phase": "soak", "capacity_sessions_per_sec": 45.0, "capacity_from": "this-run",
                "at_sessions_per_sec": 27.0, "offered_rate_per_sec": 108.0,
                "model_rate_per_sec": 120.0, "achieved_rate_per_sec": 108.0,
                "slopes": {
                    "rss_bytes_per_sec": {"estimate": 30000.0, "low": 28000.0, "high": 32000.0},
                    "p99_seconds_per_sec": {"estimate": 0.0002, "low": 0.0001, "high": 0.0003},
                    "threads_per_sec": null, "fds_per_sec": null,
                },
                "leak": null, "aborted": null, "valid": true, "invalid_reasons": [],
                "windows": 20, "samples": 20,
            });
        }
        result
    }

    /// The PNG rendering of `svg` (text is not drawn: resvg is built without fonts).
    fn rasterize(svg: &str) -> resvg::tiny_skia::Pixmap {
        let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default()).unwrap();
        let size = tree.size().to_int_size();
        let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::default(),
            &mut pixmap.as_mut(),
        );
        pixmap
    }

    /// Pixels within a small tolerance of `color` (anti-aliasing blends only the edges).
    fn count(pixmap: &resvg::tiny_skia::Pixmap, color: RGBColor) -> usize {
        let close = |a: u8, b: u8| a.abs_diff(b) <= 3;
        pixmap
            .pixels()
            .iter()
            .filter(|p| {
                let c = p.demultiply();
                c.alpha() == 255
                    && close(c.red(), color.0)
                    && close(c.green(), color.1)
                    && close(c.blue(), color.2)
            })
            .count()
    }

    fn distinct_colors(pixmap: &resvg::tiny_skia::Pixmap) -> usize {
        pixmap
            .pixels()
            .iter()
            .map(|p| (p.red(), p.green(), p.blue(), p.alpha()))
            .collect::<HashSet<_>>()
            .len()
    }

    fn non_white_share(pixmap: &resvg::tiny_skia::Pixmap) -> f64 {
        let ink = pixmap
            .pixels()
            .iter()
            .filter(|p| (p.red(), p.green(), p.blue()) != (255, 255, 255))
            .count();
        ink as f64 / pixmap.pixels().len() as f64
    }

    const HEAD: &str = "3f2a91c0aa5f7c2d2ad1ac2b0ff13a1e5d2b7c11";
    const BASE: &str = "1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e";

    #[test]
    fn latency_chart_draws_a_line_per_class_with_the_slo_and_the_knee() {
        let head = result(HEAD, 1.0, true);
        let svg = render_latency(&head, None).unwrap().unwrap();
        assert!(svg.contains("knee 180 req/s"), "knee label missing");
        assert!(svg.contains("SLO p99 200 ms"), "SLO line missing");
        assert!(svg.contains("head 3f2a91c"));
        let png = rasterize(&svg);
        for (i, class) in CLASSES.iter().enumerate() {
            // Its markers alone give 650 to 900 pixels of its colour, with its four lines 2100 to
            // 2600 (measured): the lines are there.
            let n = count(&png, class_color(i));
            assert!(n > 1500, "class {class}: only {n} pixels of its colour");
        }
        assert!(count(&png, SLO_COLOR) > 200, "the SLO line is not drawn");
        assert!(distinct_colors(&png) > 50);
        assert!(non_white_share(&png) > 0.02);
        assert!(!svg.contains("not judged"));
    }

    /// Regression: the SLO line was guessed from break reasons, so a ramp where nothing broke on
    /// latency had none. The recorded `[slo]` now gives every limit.
    #[test]
    fn the_slo_line_comes_from_the_recorded_slo() {
        let mut head = result(HEAD, 1.0, false);
        for step in head["ramp"]["steps"].as_array_mut().unwrap() {
            step["held"]["reasons"] = json!([]);
        }
        head["slo"] = json!({
            "latency": [
                {"quantile": 0.5, "label": "p50", "limit_ms": 50.0},
                {"quantile": 0.99, "label": "p99", "limit_ms": 250.0},
            ],
            "error_rate": 0.01, "min_requests": 100,
        });
        let svg = render_latency(&head, None).unwrap().unwrap();
        assert!(svg.contains("SLO p50 50 ms"), "{svg}");
        assert!(svg.contains("SLO p99 250 ms"));
        assert!(!svg.contains("SLO p99 200 ms"));
    }

    #[test]
    fn without_a_recorded_slo_the_limits_are_read_from_break_reasons() {
        let mut head = result(HEAD, 1.0, false);
        assert_eq!(
            ramp_view("head", &head).slo,
            [SloLimit {
                label: "p99".to_owned(),
                ms: 200.0
            }]
        );
        for step in head["ramp"]["steps"].as_array_mut().unwrap() {
            if step["held"]["holds"] == json!(false) {
                step["held"]["reasons"] = json!(["all classes pooled p99 310 ms > 180 ms"]);
            }
        }
        let view = ramp_view("head", &head);
        assert_eq!(view.slo.len(), 1);
        assert!((view.slo[0].ms - 180.0).abs() < 1e-9);
    }

    #[test]
    fn classes_the_slo_did_not_judge_are_drawn_hollow_and_explained() {
        let mut head = result(HEAD, 1.0, false);
        head["ramp"]["steps"][0]["held"]["unjudged"] = json!(["landing"]);
        let view = ramp_view("head", &head);
        let judged: Vec<bool> = view.steps[0].classes.iter().map(|c| c.judged).collect();
        assert_eq!(judged, [false, true, true]);
        let svg = render_latency(&head, None).unwrap().unwrap();
        assert!(svg.contains("not judged (slo.min-requests)"));
    }

    /// Regression: a step with too few requests to judge (neither held nor broke) was drawn as
    /// having broken the SLO.
    #[test]
    fn a_step_with_too_few_requests_is_not_drawn_as_broken() {
        let mut head = result(HEAD, 1.0, false);
        let steps = head["ramp"]["steps"].as_array_mut().unwrap();
        steps[0]["held"] =
            json!({"holds": false, "reasons": [], "unjudged": [], "basis": "too-few-requests"});
        // Aborted, the same step broke.
        steps[1]["held"] =
            json!({"holds": false, "reasons": [], "unjudged": [], "basis": "too-few-requests"});
        steps[1]["aborted"] = json!("p99 past 5 s");
        let view = ramp_view("head", &head);
        assert_eq!(view.steps[0].state, StepState::TooFew);
        assert_eq!(view.steps[1].state, StepState::Broke);
        let svg = render_throughput(&head, None).unwrap().unwrap();
        assert!(svg.contains("too few requests to judge"));
    }

    #[cfg(unix)]
    #[test]
    fn charts_are_readable_like_other_written_files() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let written = write_charts(dir.path(), &result(HEAD, 1.0, false), None).unwrap();
        let reference = dir.path().join("reference");
        std::fs::write(&reference, "").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // 0644 minus the umask (a normal file create, 0666 minus the umask, minus group and other
        // write), not the 0600 of a temporary file.
        assert_eq!(
            mode(&written[0]),
            mode(&reference) & crate::result::WRITTEN_FILE_MODE
        );
    }

    #[test]
    fn the_base_is_drawn_lighter_beside_the_head() {
        let head = result(HEAD, 1.2, true);
        let base = result(BASE, 1.0, true);
        let svg = render_latency(&head, Some(&base)).unwrap().unwrap();
        assert!(svg.contains("base 1b2c3d4"));
        let png = rasterize(&svg);
        for i in 0..CLASSES.len() {
            assert!(count(&png, class_color(i)) > 300);
            assert!(
                count(&png, lighter(class_color(i))) > 50,
                "base line of class {i} missing"
            );
        }
        let svg = render_throughput(&head, Some(&base)).unwrap().unwrap();
        let png = rasterize(&svg);
        assert!(count(&png, SERIES_COLOR) > 300);
        assert!(count(&png, lighter(SERIES_COLOR)) > 100);
    }

    #[test]
    fn throughput_chart_draws_points_the_reference_and_the_knee() {
        let svg = render_throughput(&result(HEAD, 1.0, false), None)
            .unwrap()
            .unwrap();
        assert!(svg.contains("knee 180 req/s"));
        let png = rasterize(&svg);
        // Markers alone: about 300 pixels; with the line about 1400 (measured).
        let n = count(&png, SERIES_COLOR);
        assert!(n > 800, "the head's line is lost: {n} pixels");
        let n = count(&png, GOODPUT_COLOR);
        assert!(n > 800, "the goodput line is lost: {n} pixels");
        assert!(count(&png, KNEE_COLOR) > 200, "the knee line is lost");
        assert!(non_white_share(&png) > 0.02);
    }

    /// Regression: "achieved" was requests sent, and the chart called it "sent"; it now counts
    /// answers, and older results (whose windows lack `answered`) still say what they hold.
    #[test]
    fn the_throughput_chart_says_whether_achieved_counts_answers() {
        let mut head = result(HEAD, 1.0, true);
        let svg = render_throughput(&head, None).unwrap().unwrap();
        assert!(svg.contains("sent (older result)"));
        assert!(!svg.contains("answered"));
        for phase in head["phases"].as_array_mut().unwrap() {
            for w in phase["windows"]["windows"].as_array_mut().unwrap() {
                w["answered"] = json!(100);
            }
        }
        let svg = render_throughput(&head, None).unwrap().unwrap();
        assert!(svg.contains("answered"));
        assert!(svg.contains("Answers received (any outcome)"));
        assert!(!svg.contains("sent (older result)"));
    }

    #[test]
    fn soak_chart_draws_both_series_and_their_fits() {
        let head = result(HEAD, 1.0, true);
        let svg = render_soak(&head).unwrap().unwrap();
        assert!(svg.contains("Soak at 108 req/s offered (60% of the capacity)"));
        assert!(svg.contains("Theil–Sen +29.3 KiB/s"), "{svg}");
        let png = rasterize(&svg);
        // Markers alone: about 1100 pixels; with both series' lines about 1700 (measured).
        let n = count(&png, SERIES_COLOR);
        assert!(n > 1350, "a series' line is lost: {n} pixels");
        assert!(count(&png, FIT_COLOR) > 300, "a fitted line is lost");
    }

    #[test]
    fn a_run_without_a_soak_gets_no_soak_chart() {
        let head = result(HEAD, 1.0, false);
        assert_eq!(render_soak(&head).unwrap(), None);
        let dir = tempfile::tempdir().unwrap();
        // A soak chart left by an earlier run must not stay beside this run's result.
        std::fs::write(dir.path().join(SOAK_CHART), "old").unwrap();
        let written = write_charts(dir.path(), &head, None).unwrap();
        assert_eq!(
            written,
            vec![
                dir.path().join(LATENCY_CHART),
                dir.path().join(THROUGHPUT_CHART)
            ]
        );
        assert!(!dir.path().join(SOAK_CHART).exists());
    }

    #[test]
    fn write_charts_writes_all_three_when_there_is_a_soak() {
        let dir = tempfile::tempdir().unwrap();
        let head = result(HEAD, 1.0, true);
        let written = write_charts(&dir.path().join("out"), &head, None).unwrap();
        assert_eq!(written.len(), 3);
        for path in written {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.starts_with("<svg"), "{}", path.display());
        }
    }

    #[test]
    fn empty_or_partial_results_draw_what_exists_without_panicking() {
        let empty = json!({});
        assert_eq!(render_latency(&empty, None).unwrap(), None);
        assert_eq!(render_throughput(&empty, None).unwrap(), None);
        assert_eq!(render_soak(&empty).unwrap(), None);
        let mut no_steps = result(HEAD, 1.0, false);
        no_steps["ramp"]["steps"] = json!([]);
        assert_eq!(render_latency(&no_steps, Some(&empty)).unwrap(), None);
        assert_eq!(render_throughput(&no_steps, None).unwrap(), None);
        // An aborted soak with no windows and no samples has nothing to draw.
        let mut aborted = result(HEAD, 1.0, true);
        aborted["soak"]["aborted"] = json!("p99 over 5 s");
        aborted["phases"].as_array_mut().unwrap().pop();
        aborted["resources"] = json!([]);
        assert_eq!(render_soak(&aborted).unwrap(), None);
        // A step with no requests, a step without figures, a phase without a histogram.
        let mut partial = result(HEAD, 1.0, false);
        partial["ramp"]["steps"][0]["operations"][0]["requests"] = json!(0);
        partial["ramp"]["steps"][1]["operations"] = json!(null);
        partial["ramp"]["steps"][2]["offered_rate_per_sec"] = json!(null);
        partial["phases"][3]["operations"] = json!("garbage");
        partial["ramp"]["knee_rate_per_sec"] = json!(null);
        assert!(render_latency(&partial, None).unwrap().is_some());
        assert!(render_throughput(&partial, None).unwrap().is_some());
        // Only the RSS series of a soak whose phase is missing its windows.
        let mut rss_only = result(HEAD, 1.0, true);
        rss_only["phases"][6]["windows"]["windows"] = json!([]);
        let svg = render_soak(&rss_only).unwrap().unwrap();
        assert!(svg.contains("RSS (MiB)") && !svg.contains("p99 latency"));
    }

    #[test]
    fn a_wide_range_switches_to_a_log_axis() {
        let mut head = result(HEAD, 1.0, false);
        head["ramp"]["steps"][0]["operations"][0]["p50_ms"] = json!(0.05);
        let svg = render_latency(&head, None).unwrap().unwrap();
        assert!(svg.contains("(log scale)"));
        // Within two decades the axis stays linear.
        let mut narrow = result(HEAD, 1.0, false);
        narrow["phases"] = json!([]);
        for (i, step) in narrow["ramp"]["steps"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            let i = i as f64;
            for op in step["operations"].as_array_mut().unwrap() {
                op["p50_ms"] = json!(10.0 + i);
                op["p99_ms"] = json!(40.0 + 10.0 * i);
                op["max_ms"] = json!(80.0 + 20.0 * i);
            }
        }
        let svg = render_latency(&narrow, None).unwrap().unwrap();
        assert!(!svg.contains("(log scale)"));
    }

    #[test]
    fn a_ramp_where_nothing_broke_shows_no_knee_only_its_highest_step() {
        let mut head = result(HEAD, 1.0, false);
        head["ramp"]["lowest_break"] = json!(null);
        head["ramp"]["first_break"] = json!(null);
        for chart in [
            render_latency(&head, None).unwrap().unwrap(),
            render_throughput(&head, None).unwrap().unwrap(),
        ] {
            assert!(chart.contains("held through 180 req/s, nothing broke"));
            assert!(!chart.contains("knee 180"));
        }
    }

    #[test]
    fn slo_limits_are_read_back_from_break_reasons() {
        let limit = |label: &str, ms: f64| {
            Some(SloLimit {
                label: label.to_owned(),
                ms,
            })
        };
        assert_eq!(
            parse_slo_reason("`login` p99 340 ms > 200 ms"),
            limit("p99", 200.0)
        );
        assert_eq!(
            parse_slo_reason("`a` p99.9 12.50 s > 1.50 s"),
            limit("p99.9", 1500.0)
        );
        assert_eq!(parse_slo_reason("`a` errors 3.0% > 1.0%"), None);
        assert_eq!(parse_slo_reason("aborted: p99 over 5 s"), None);
    }

    #[test]
    fn the_intercept_is_the_median_of_the_residuals() {
        let points = [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (3.0, 100.0)];
        // Residuals 1, 1, 1, 94 for slope 2: the outlier does not move the line.
        assert_eq!(theil_sen_intercept(&points, 2.0), Some(1.0));
        assert_eq!(theil_sen_intercept(&[], 2.0), None);
    }
}
