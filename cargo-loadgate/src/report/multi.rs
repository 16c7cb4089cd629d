//! The multi-run report (`cargo loadgate report A.json B.json …`): several run results side by
//! side — two tiers (two resource limits), or one service before and after a change (seed 004's
//! multi-run report).
//!
//! Each result is read from its JSON form (as `result.json` was written, by this version or an
//! older one) into a [`ReportRun`], refusing what cannot be shown with an error naming the file.
//! The runs are then rendered for the terminal ([`render_terminal`]) or as Markdown for a pull
//! request ([`render_markdown`]). Formatting only: the ratios to the first run are plain
//! quotients of the stored figures and carry no statistics — a run's verdict, when it has one, is
//! the statistical comparison with its baseline.

use super::markdown::escape;
use super::table::{Cell, Table};
use crate::baseline::short;
use crate::config::{format_millis, format_size};
use crate::measure::probe::{ProbeRecord, ProbeStatus, format_value};
use crate::measure::{OperationSummary, PhaseSummary};
use crate::plan::{CapacitySource, RampOutcome, Slopes, SoakOutcome, StepStatus, format_rate};
use crate::result::{
    MeasurementMode, RESULT_FORMAT_VERSION, ReadError, RunResult, RunStatus, Verdict, read_result,
};
use crate::stats::SlopeEstimate;
use crate::targets::TargetInfo;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Why a run result cannot go into the report. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file could not be read.
    #[error("failed to read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{} is not a run result: it is not JSON", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// The reader's error, naming the line and column.
        #[source]
        source: Box<ReadError>,
    },
    /// The file is JSON but not a run result.
    #[error(
        "{} is not a run result: it has no format_version\nhint: give the `result.json` that `cargo loadgate run` wrote to its out-dir",
        path.display()
    )]
    NotAResult {
        /// The file.
        path: PathBuf,
    },
    /// The result was written by a newer cargo-loadgate in a format this one does not know.
    #[error(
        "{} was written in result format {found}, newer than {RESULT_FORMAT_VERSION}, the newest this cargo-loadgate reads\nhint: report it with the cargo-loadgate that wrote it, or a newer one",
        path.display()
    )]
    NewerFormat {
        /// The file.
        path: PathBuf,
        /// Its format version.
        found: u64,
    },
    /// The run has no capacity ramp, so it has no capacity to put beside the others.
    #[error(
        "{} has no ramp: the run measured no capacity to put beside the others",
        path.display()
    )]
    NoRamp {
        /// The file.
        path: PathBuf,
    },
    /// A part of the result is not in the shape its format version promises.
    #[error("the `{at}` in {} is not readable", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Where in the document: `ramp.steps`, `verdict.outcome`, `phases[6]`.
        at: String,
        /// The reader's error, naming the line and column.
        #[source]
        source: Box<ReadError>,
    },
}

/// The report's error for a result the one reader ([`crate::result::read_result`]) refused,
/// naming the file; the reader's error, with its line and column, is the cause.
fn refused(path: &Path, error: ReadError) -> ReportError {
    let path = path.to_owned();
    match error {
        ReadError::Io { source, .. } => ReportError::Read { path, source },
        ReadError::NoFormatVersion { .. } => ReportError::NotAResult { path },
        ReadError::NewerFormat { found, .. } => ReportError::NewerFormat { path, found },
        ReadError::Malformed {
            path: named,
            line,
            column,
            message,
            at,
        } => {
            let source = |at| {
                Box::new(ReadError::Malformed {
                    path: named,
                    line,
                    column,
                    message,
                    at,
                })
            };
            match at {
                None => ReportError::NotJson {
                    path,
                    source: source(None),
                },
                Some(at) => ReportError::Unreadable {
                    path,
                    at: at.clone(),
                    source: source(Some(at)),
                },
            }
        }
    }
}

/// One run of the report, read from its result and named.
#[derive(Clone, Debug)]
pub struct ReportRun {
    label: String,
    source: String,
    started_at_unix_ms: u64,
    status: RunStatus,
    commit: Option<(String, bool)>,
    profile: String,
    target: String,
    machine: String,
    config_hash: String,
    schedules: Vec<(String, String)>,
    ramp: RampOutcome,
    soak: Option<Soak>,
    soak_skipped: Option<String>,
    health: Health,
    verdict: Option<Verdict>,
    /// A paired run's mode line ([`PairedRecord::describe`](crate::result::PairedRecord::describe));
    /// `None` for a stored run.
    paired: Option<String>,
    /// What its `[[probe]]`s sampled of the dependencies.
    probes: Vec<ProbeRecord>,
}

/// The soak of a run: its outcome and, when its phase is in the result, the phase's figures.
#[derive(Clone, Debug)]
struct Soak {
    outcome: SoakOutcome,
    summary: Option<PhaseSummary>,
}

/// Whether the generator kept its schedule, over every phase of a run.
#[derive(Clone, Debug, PartialEq)]
struct Health {
    /// The worst pacing lag p99 of any phase, with the phase.
    worst_lag: Option<(String, Duration)>,
    /// Arrivals dropped over every phase.
    dropped: u64,
    /// The result's own validity (`None` while the run was unfinished).
    valid: Option<bool>,
    /// The phases that did not keep their schedule.
    invalid: Vec<String>,
}

impl ReportRun {
    /// Reads the run result at `path` and names it `label`.
    ///
    /// Refused: a file that is not a run result, a newer format, a part that is not in the shape
    /// the format promises, and a result without a ramp.
    pub fn read(label: String, path: &Path) -> Result<Self, ReportError> {
        let result = read_result(path).map_err(|e| refused(path, e))?;
        Self::from_result(label, path, &result)
    }

    /// The run of `result`, read from `path`, named `label`; refused without a ramp.
    pub fn from_result(
        label: String,
        path: &Path,
        result: &RunResult,
    ) -> Result<Self, ReportError> {
        let Some(ramp) = result.ramp.clone() else {
            return Err(ReportError::NoRamp {
                path: path.to_owned(),
            });
        };
        let soak = result.soak.as_ref().map(|outcome| Soak {
            summary: result
                .phases
                .iter()
                .find(|p| p.measurement.name == outcome.phase)
                .map(|p| p.measurement.summary()),
            outcome: outcome.clone(),
        });
        let health = health(&ramp, soak.as_ref(), result.valid);
        Ok(Self {
            label,
            source: path.display().to_string(),
            started_at_unix_ms: result.started_at_unix_ms,
            status: result.status,
            commit: result
                .git
                .as_ref()
                .map(|git| (short(&git.commit).to_owned(), git.dirty)),
            profile: result.profile.clone(),
            target: describe_target(result.target.as_ref()),
            machine: format!(
                "{}, {} cores",
                result.environment.cpu_model, result.environment.cores
            ),
            config_hash: result.config_hash.clone(),
            schedules: result
                .phases
                .iter()
                .map(|p| (p.measurement.name.clone(), p.schedule_hash.clone()))
                .collect(),
            ramp,
            soak,
            soak_skipped: result.soak_skipped.clone(),
            health,
            verdict: result.verdict.clone(),
            paired: (result.mode == MeasurementMode::Paired).then(|| {
                result
                    .paired
                    .as_ref()
                    .map_or_else(|| "no blocks recorded".to_owned(), |p| p.describe())
            }),
            probes: result.probes.clone(),
        })
    }
}

fn health(ramp: &RampOutcome, soak: Option<&Soak>, valid: Option<bool>) -> Health {
    let mut phases: Vec<(String, Duration, u64, bool)> = ramp
        .steps
        .iter()
        .map(|s| {
            let kept = s.status() != StepStatus::Invalid;
            (s.phase.clone(), s.lag_p99, s.dropped, kept)
        })
        .collect();
    if let Some((soak, summary)) = soak.and_then(|s| s.summary.as_ref().map(|m| (s, m))) {
        phases.push((
            soak.outcome.phase.clone(),
            summary.lag_p99,
            summary.dropped,
            soak.outcome.valid,
        ));
    }
    Health {
        worst_lag: phases
            .iter()
            .max_by_key(|p| p.1)
            .map(|p| (p.0.clone(), p.1)),
        dropped: phases.iter().map(|p| p.2).sum(),
        valid,
        invalid: phases
            .iter()
            .filter(|p| !p.3)
            .map(|p| p.0.clone())
            .collect(),
    }
}

/// `container, 1 CPU, 256MiB, cores 1, host network`, `process, cores 1`, `url`.
fn describe_target(target: Option<&TargetInfo>) -> String {
    let Some(target) = target else {
        return "target unknown".to_owned();
    };
    let mut parts = vec![target.kind.name().to_owned()];
    if let Some(cpus) = target.cpus {
        parts.push(format!("{cpus} CPU{}", if cpus > 1.0 { "s" } else { "" }));
    }
    if let Some(bytes) = target.memory_bytes {
        parts.push(format_size(bytes));
    }
    if let Some(cpuset) = &target.cpuset {
        parts.push(format!("cores {cpuset}"));
    }
    if let Some(network) = &target.network {
        parts.push(
            match network.path {
                crate::targets::NetworkPath::Host => "host network",
                crate::targets::NetworkPath::Published => "published port",
            }
            .to_owned(),
        );
    }
    parts.join(", ")
}

/// `2026-11-29 22:17 UTC` for a time in milliseconds since the Unix epoch.
fn format_utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let in_day = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        in_day / 3600,
        in_day % 3600 / 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, <https://howardhinnant.github.io/date_algorithms.html>).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Names the runs after their files: the parent directory's name (`target/loadgate/result.json`
/// → `loadgate`), with more of the path where two would share a name; the file's name without
/// its extension for files in one directory (`runs/before.json` → `before`); else the whole
/// path, then the position.
pub fn run_labels(paths: &[PathBuf]) -> Vec<String> {
    let dirs: Vec<Vec<String>> = paths
        .iter()
        .map(|p| {
            p.parent()
                .map(|d| {
                    d.components()
                        .filter_map(|c| match c {
                            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    let deepest = dirs.iter().map(Vec::len).max().unwrap_or(0);
    for depth in 1..=deepest.max(1) {
        let labels: Vec<String> = paths
            .iter()
            .zip(&dirs)
            .map(|(path, dirs)| {
                if dirs.is_empty() {
                    path.file_stem()
                        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
                } else {
                    dirs[dirs.len().saturating_sub(depth)..].join("/")
                }
            })
            .collect();
        if distinct(&labels) {
            return labels;
        }
    }
    let stems: Vec<String> = paths
        .iter()
        .map(|p| {
            p.file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
        })
        .collect();
    if distinct(&stems) {
        return stems;
    }
    let labels: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    if distinct(&labels) {
        return labels;
    }
    labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| format!("{l} #{}", i + 1))
        .collect()
}

fn distinct(labels: &[String]) -> bool {
    let mut seen = HashSet::new();
    labels.iter().all(|l| seen.insert(l))
}

/// The capacity a ramp found, as the report states it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Knee {
    /// Held at this offered rate and broke above it.
    At(f64),
    /// Held at this rate, the highest the ramp ran: the knee lies above it.
    AtLeast(f64),
    /// Nothing held.
    None,
}

impl Knee {
    fn of(ramp: &RampOutcome) -> Self {
        match (ramp.knee_rate_per_sec, &ramp.lowest_break) {
            (Some(k), Some(_)) => Self::At(k),
            (Some(k), None) => Self::AtLeast(k),
            (None, _) => Self::None,
        }
    }

    fn cell(self, valid: bool) -> String {
        let value = match self {
            Self::At(k) => format_rate(k),
            Self::AtLeast(k) => format!("≥ {}", format_rate(k)),
            Self::None => "none held".to_owned(),
        };
        if valid {
            value
        } else {
            format!("{value} (invalid ramp)")
        }
    }

    /// This knee over `first`'s, with the direction a bound leaves it open in.
    fn ratio_to(self, first: Self) -> String {
        match (first, self) {
            (Self::At(a), Self::At(b)) => times(b, a),
            (Self::AtLeast(a), Self::At(b)) => format!("≤ {}", times(b, a)),
            (Self::At(a), Self::AtLeast(b)) => format!("≥ {}", times(b, a)),
            (Self::AtLeast(_), Self::AtLeast(_)) => "unknown".to_owned(),
            (Self::None, _) | (_, Self::None) => "–".to_owned(),
        }
    }
}

/// `value / base` as `1.23×`, `12.3×` or `123×`, or `–` when `base` is not a positive figure.
fn times(value: f64, base: f64) -> String {
    if !(base > 0.0 && value.is_finite() && base.is_finite()) {
        return "–".to_owned();
    }
    format!("{}×", format_rate(value / base))
}

/// The Markdown and terminal renderings differ only in how they draw a table, emphasise a name
/// and set off a note; the content is built once.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Terminal,
    Markdown,
}

impl Style {
    /// A table, drawn for the terminal or in Markdown.
    fn table(self, table: Table) -> String {
        match self {
            Self::Terminal => table.terminal(),
            Self::Markdown => table.markdown(),
        }
    }

    fn text(self, text: &str) -> String {
        match self {
            Self::Terminal => text.to_owned(),
            Self::Markdown => escape(text),
        }
    }

    fn name(self, label: &str) -> String {
        match self {
            Self::Terminal => label.to_owned(),
            Self::Markdown => format!("**{}**", escape(label)),
        }
    }

    /// A section's title, given in lowercase: as is on the terminal, capitalised in Markdown.
    fn heading(self, out: &mut String, title: &str) {
        match self {
            Self::Terminal => {
                let _ = writeln!(out, "\n{title}");
            }
            Self::Markdown => {
                let mut chars = title.chars();
                let capitalised: String = chars
                    .next()
                    .map(|c| c.to_uppercase().chain(chars).collect())
                    .unwrap_or_default();
                let _ = writeln!(out, "\n### {capitalised}\n");
            }
        }
    }

    /// Separates a part of a section from the one before: a blank line.
    fn gap(self, out: &mut String) {
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
    }

    /// A list of lines: indented on the terminal, a bulleted list in Markdown.
    fn list(self, out: &mut String, items: &[String]) {
        if items.is_empty() {
            return;
        }
        if self == Self::Markdown {
            self.gap(out);
        }
        for item in items {
            match self {
                Self::Terminal => {
                    let _ = writeln!(out, "  {item}");
                }
                Self::Markdown => {
                    let _ = writeln!(out, "- {item}");
                }
            }
        }
    }
}

/// Renders the report for the terminal: aligned columns, one section per question.
pub fn render_terminal(runs: &[ReportRun]) -> String {
    render(runs, Style::Terminal)
}

/// Renders the report as GitHub-flavoured Markdown, for `$GITHUB_STEP_SUMMARY` and pull-request
/// comments.
pub fn render_markdown(runs: &[ReportRun]) -> String {
    render(runs, Style::Markdown)
}

fn render(runs: &[ReportRun], style: Style) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let compared = runs.len() > 1;
    let count = match runs.len() {
        1 => "one run".to_owned(),
        n => format!("{n} runs side by side"),
    };
    let latencies = "latencies are measured from the intended send time";
    match (style, compared) {
        (Style::Terminal, true) => {
            let _ = writeln!(
                out,
                "cargo-loadgate report: {count}\nratios (×) are to the first run, {}; {latencies}",
                first.label
            );
        }
        (Style::Terminal, false) => {
            let _ = writeln!(out, "cargo-loadgate report: {count}\n{latencies}");
        }
        (Style::Markdown, true) => {
            let _ = writeln!(
                out,
                "## cargo-loadgate report: {count}\n\nRatios (×) are to the first run, {}; {latencies}.",
                style.name(&first.label)
            );
        }
        (Style::Markdown, false) => {
            let _ = writeln!(
                out,
                "## cargo-loadgate report: {count}\n\nLatencies are measured from the intended send time."
            );
        }
    }
    header(&mut out, runs, style);
    let notes = notes(runs);
    if !notes.is_empty() {
        match style {
            Style::Terminal => {
                out.push('\n');
                for note in &notes {
                    let _ = writeln!(out, "note: {note}");
                }
            }
            Style::Markdown => {
                out.push('\n');
                for note in &notes {
                    let _ = writeln!(out, "> ⚠️ {}", escape(note));
                }
            }
        }
    }
    capacity(&mut out, runs, style);
    soak(&mut out, runs, style);
    probes(&mut out, runs, style);
    generator_health(&mut out, runs, style);
    verdicts(&mut out, runs, style);
    out
}

fn outcome_word(verdict: Option<&Verdict>, style: Style) -> String {
    let (icon, word) = super::markdown::verdict_badge(verdict.map(|v| v.outcome));
    match style {
        Style::Terminal => word.to_owned(),
        Style::Markdown => format!("{icon} {word}"),
    }
}

fn dirty_mark(dirty: bool) -> &'static str {
    if dirty { " (dirty)" } else { "" }
}

fn header(out: &mut String, runs: &[ReportRun], style: Style) {
    let rows: Vec<Vec<Cell>> = runs
        .iter()
        .map(|run| {
            let commit = match &run.commit {
                Some((c, dirty)) => Cell::code(c).then(Cell::text(dirty_mark(*dirty))),
                None => Cell::text("none"),
            };
            vec![
                Cell::text(&run.label),
                commit,
                Cell::text(&run.profile),
                Cell::text(&run.target),
                Cell::text(format_utc(run.started_at_unix_ms)),
                Cell::text(outcome_word(run.verdict.as_ref(), style)),
                Cell::text(&run.source),
            ]
        })
        .collect();
    let columns = [
        "run", "commit", "profile", "target", "started", "verdict", "file",
    ];
    out.push('\n');
    // Text columns, all of them.
    out.push_str(&style.table(Table::new(&columns).left(&[1, 2, 3, 4, 5, 6]).rows(rows)));
    // A paired run's verdict rests on its own base, measured beside it: one line says so.
    let paired: Vec<String> = runs
        .iter()
        .filter_map(|run| {
            let line = run.paired.as_ref()?;
            Some(format!(
                "{}: paired mode, {}",
                style.name(&run.label),
                style.text(line)
            ))
        })
        .collect();
    if !paired.is_empty() {
        style.gap(out);
        style.list(out, &paired);
    }
}

/// What a reader must know before comparing the numbers: loads that are not the same, another
/// machine, a run that did not finish.
fn notes(runs: &[ReportRun]) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(first) = runs.first() else {
        return notes;
    };
    for run in &runs[1..] {
        if run.config_hash != first.config_hash {
            notes.push(format!(
                "{} ran another configuration than {} (config {} vs {}): their workloads or limits differ, so their loads are not the same",
                run.label,
                first.label,
                abbreviate(&run.config_hash),
                abbreviate(&first.config_hash)
            ));
        } else {
            let differing: Vec<&str> = run
                .schedules
                .iter()
                .filter(|(name, hash)| first.schedules.iter().any(|(n, h)| n == name && h != hash))
                .map(|(name, _)| name.as_str())
                .collect();
            if !differing.is_empty() {
                notes.push(format!(
                    "{} ran other schedules than {} in {}: the loads there are not the same",
                    run.label,
                    first.label,
                    differing.join(", ")
                ));
            }
        }
        if run.machine != first.machine {
            notes.push(format!(
                "{} ran on another machine than {} ({} vs {})",
                run.label, first.label, run.machine, first.machine
            ));
        }
    }
    for run in runs {
        match run.status {
            RunStatus::Complete => {}
            RunStatus::Running => notes.push(format!(
                "{} did not finish: it shows the phases measured before it stopped",
                run.label
            )),
            RunStatus::TargetFailed => notes.push(format!(
                "{}: the target failed during the run; it shows the phases measured before",
                run.label
            )),
        }
    }
    notes
}

fn abbreviate(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn capacity(out: &mut String, runs: &[ReportRun], style: Style) {
    let first = Knee::of(&runs[0].ramp);
    let compared = runs.len() > 1;
    style.heading(
        out,
        "capacity: the knee, the highest offered load that held",
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let knee = Knee::of(&run.ramp);
            let mut row = vec![run.label.clone(), knee.cell(run.ramp.valid)];
            if compared {
                row.push(if i == 0 {
                    "–".to_owned()
                } else {
                    knee.ratio_to(first)
                });
            }
            row
        })
        .collect();
    let ratio = format!("vs {}", runs[0].label);
    let mut header = vec!["run", "knee req/s"];
    if compared {
        header.push(&ratio);
    }
    out.push_str(&style.table(Table::new(&header).rows(rows)));
    style.gap(out);
    out.push_str(if style == Style::Terminal {
        "ramp:\n"
    } else {
        "The ramp, in one sentence per run:\n"
    });
    let sentences: Vec<String> = runs
        .iter()
        .map(|run| {
            format!(
                "{}: {}",
                style.name(&run.label),
                style.text(&run.ramp.sentence)
            )
        })
        .collect();
    style.list(out, &sentences);
}

fn soak(out: &mut String, runs: &[ReportRun], style: Style) {
    style.heading(out, "soak");
    let first = &runs[0];
    let compared = runs.len() > 1;
    let with_soak: Vec<(&ReportRun, &Soak)> = runs
        .iter()
        .filter_map(|run| run.soak.as_ref().map(|s| (run, s)))
        .collect();
    let missing: Vec<String> = runs
        .iter()
        .filter(|run| run.soak.is_none())
        .map(|run| {
            format!(
                "{}: no soak{}",
                style.name(&run.label),
                run.soak_skipped
                    .as_deref()
                    .map(|r| format!(" ({})", style.text(r)))
                    .unwrap_or_default()
            )
        })
        .collect();
    if with_soak.is_empty() {
        style.list(out, &missing);
        return;
    }
    let rows: Vec<Vec<String>> = with_soak
        .iter()
        .map(|(run, soak)| {
            let o = &soak.outcome;
            let share = o.percent_of_capacity();
            let of = match o.capacity_from {
                CapacitySource::Baseline => "the baseline's knee",
                CapacitySource::ThisRun => "its own knee",
            };
            let (requests, error_rate) = soak.summary.as_ref().map_or_else(
                || ("?".to_owned(), "?".to_owned()),
                |s| {
                    let rate = if s.total.requests > 0 {
                        s.total.errors as f64 * 100.0 / s.total.requests as f64
                    } else {
                        0.0
                    };
                    (s.total.requests.to_string(), format!("{rate:.2}%"))
                },
            );
            vec![
                run.label.clone(),
                format!("{share:.0}% of {of}"),
                format_rate(o.offered_rate_per_sec),
                format_rate(o.achieved_rate_per_sec),
                o.windows.to_string(),
                requests,
                error_rate,
            ]
        })
        .collect();
    let header = [
        "run",
        "load point",
        "offered req/s",
        "achieved req/s",
        "windows",
        "requests",
        "error rate",
    ];
    out.push_str(&style.table(Table::new(&header).left(&[1]).rows(rows)));
    style.list(out, &missing);
    style.gap(out);
    operations(out, first, &with_soak, compared, style);
    style.gap(out);
    slopes(out, &with_soak, style);
    let leaks: Vec<String> = with_soak
        .iter()
        .filter_map(|(run, soak)| {
            soak.outcome.leak.as_ref().map(|leak| {
                format!(
                    "{} {}: {}",
                    if style == Style::Markdown {
                        "**Leak**"
                    } else {
                        "LEAK"
                    },
                    style.name(&run.label),
                    style.text(leak)
                )
            })
        })
        .collect();
    style.list(out, &leaks);
}

fn operations(
    out: &mut String,
    first: &ReportRun,
    with_soak: &[(&ReportRun, &Soak)],
    compared: bool,
    style: Style,
) {
    let mut names: Vec<&str> = Vec::new();
    for (_, soak) in with_soak {
        for op in soak.summary.iter().flat_map(|s| &s.operations) {
            if !names.contains(&op.name.as_str()) {
                names.push(&op.name);
            }
        }
    }
    let base = first
        .soak
        .as_ref()
        .and_then(|s| s.summary.as_ref())
        .filter(|_| compared);
    let mut rows = Vec::new();
    let groups = names.iter().map(|n| Some(*n)).chain(std::iter::once(None));
    for name in groups {
        let find = |s: &PhaseSummary| match name {
            Some(name) => s.operations.iter().find(|op| op.name == name).cloned(),
            None => Some(s.total.clone()),
        };
        let base_op = base.and_then(find).filter(|op| op.requests > 0);
        for (i, (run, soak)) in with_soak.iter().enumerate() {
            let shown = name.unwrap_or("all");
            let group = if i == 0 || style == Style::Markdown {
                shown.to_owned()
            } else {
                String::new()
            };
            let mut row = vec![group, run.label.clone()];
            let op = soak
                .summary
                .as_ref()
                .and_then(find)
                .filter(|op| op.requests > 0);
            let ratio = |f: fn(&OperationSummary) -> Duration| match (&op, &base_op) {
                (Some(op), Some(b)) if !std::ptr::eq(*run, first) => {
                    times(f(op).as_secs_f64(), f(b).as_secs_f64())
                }
                _ => "–".to_owned(),
            };
            match &op {
                Some(op) => {
                    row.push(op.requests.to_string());
                    row.push(op.errors.to_string());
                    row.push(format_millis(op.p50));
                    if compared {
                        row.push(ratio(|o| o.p50));
                    }
                    row.push(format_millis(op.p99));
                    if compared {
                        row.push(ratio(|o| o.p99));
                    }
                }
                None => {
                    let cells = if compared { 6 } else { 4 };
                    row.push("0".to_owned());
                    row.extend(std::iter::repeat_n("–".to_owned(), cells - 1));
                }
            }
            rows.push(row);
        }
    }
    let ratio = format!("vs {}", first.label);
    let mut header = vec!["operation", "run", "requests", "errors", "p50 ms"];
    if compared {
        header.push(&ratio);
    }
    header.push("p99 ms");
    if compared {
        header.push(&ratio);
    }
    out.push_str(&style.table(Table::new(&header).left(&[1]).rows(rows)));
}

fn slopes(out: &mut String, with_soak: &[(&ReportRun, &Soak)], style: Style) {
    let cell = |v: Option<&SlopeEstimate>, f: fn(f64) -> String| match v {
        Some(v) => format!("{} ({} … {})", f(v.estimate), f(v.low), f(v.high)),
        None => "too few points".to_owned(),
    };
    // Row i is the i-th of each run's named slopes.
    let per_run: Vec<_> = with_soak
        .iter()
        .map(|(_, s)| s.outcome.slopes.named())
        .collect();
    let rows: Vec<Vec<String>> = Slopes::default()
        .named()
        .iter()
        .enumerate()
        .map(|(i, (name, _, _))| {
            std::iter::once((*name).to_owned())
                .chain(per_run.iter().map(|named| cell(named[i].1, named[i].2)))
                .collect()
        })
        .collect();
    let mut header = vec!["slope per s (95% interval)"];
    header.extend(with_soak.iter().map(|(run, _)| run.label.as_str()));
    out.push_str(&style.table(Table::new(&header).rows(rows)));
}

/// The probes of the dependencies, one row per probe and run: commits a second, blocks per
/// committed transaction (with its ratio to the first run's probe of the same name), the most
/// connections waiting on a lock, and what grew or fell through the soak. Absent when no run
/// has a probe.
fn probes(out: &mut String, runs: &[ReportRun], style: Style) {
    if runs.iter().all(|run| run.probes.is_empty()) {
        return;
    }
    style.heading(out, "probes");
    let first = runs
        .first()
        .map(|run| run.label.as_str())
        .unwrap_or_default();
    let first_probe = |name: &str| {
        runs.first()
            .and_then(|run| run.probes.iter().find(|p| p.name == name))
    };
    let dash = || "–".to_owned();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for run in runs {
        for probe in &run.probes {
            if probe.status == ProbeStatus::Missing {
                rows.push(vec![
                    probe.name.clone(),
                    run.label.clone(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                    format!(
                        "missing: {}",
                        probe.missing.as_deref().unwrap_or("not sampled")
                    ),
                ]);
                continue;
            }
            let commits: Vec<f64> = probe
                .points("xact_commit")
                .into_iter()
                .map(|(_, v)| v)
                .collect();
            let blocks = probe.blocks_per_commit();
            let base = first_probe(&probe.name).and_then(ProbeRecord::blocks_per_commit);
            let trends = probe.soak_trends();
            rows.push(vec![
                probe.name.clone(),
                run.label.clone(),
                if commits.is_empty() {
                    dash()
                } else {
                    format!(
                        "{}/s",
                        format_value(commits.iter().sum::<f64>() / commits.len() as f64)
                    )
                },
                blocks.map_or_else(dash, format_value),
                match (blocks, base) {
                    (Some(head), Some(base)) => times(head, base),
                    _ => dash(),
                },
                probe
                    .max("connections_waiting")
                    .map_or_else(dash, format_value),
                if trends.is_empty() {
                    dash()
                } else {
                    trends.join("; ").replace('`', "")
                },
            ]);
        }
    }
    let ratio = format!("vs {first}");
    let header = [
        "probe",
        "run",
        "commits",
        "blocks per commit",
        ratio.as_str(),
        "max waiting",
        "through the soak",
    ];
    out.push_str(&style.table(Table::new(&header).left(&[1, 6]).rows(rows)));
    // The statements that read the most, with their blocks a call against the first run's same
    // statement: where a missing index shows by name.
    let mut statements: Vec<Vec<String>> = Vec::new();
    for run in runs {
        for probe in &run.probes {
            let then = first_probe(&probe.name);
            for st in probe.statements.iter().take(REPORT_STATEMENTS) {
                let before = then.and_then(|b| b.statements.iter().find(|s| s.query == st.query));
                statements.push(vec![
                    probe.name.clone(),
                    run.label.clone(),
                    st.query.clone(),
                    st.calls.to_string(),
                    format_value(st.blocks_per_call),
                    before.map_or_else(dash, |b| times(st.blocks_per_call, b.blocks_per_call)),
                ]);
            }
        }
    }
    if !statements.is_empty() {
        let header = [
            "probe",
            "run",
            "statement (the most blocks first)",
            "calls",
            "blocks a call",
            ratio.as_str(),
        ];
        out.push_str(&style.table(Table::new(&header).left(&[1, 2]).rows(statements)));
    }
}

/// How many statements of each run's probe the multi-run report shows.
const REPORT_STATEMENTS: usize = 3;

fn generator_health(out: &mut String, runs: &[ReportRun], style: Style) {
    style.heading(out, "generator health");
    let rows: Vec<Vec<Cell>> = runs
        .iter()
        .map(|run| {
            let h = &run.health;
            let valid = match (h.valid, h.invalid.is_empty()) {
                (Some(true), _) | (None, true) => "yes".to_owned(),
                (_, true) => "no".to_owned(),
                (_, false) => format!("no: {}", h.invalid.join(", ")),
            };
            let valid = if h.valid == Some(false) {
                Cell::strong(&valid)
            } else {
                Cell::text(valid)
            };
            vec![
                Cell::text(&run.label),
                Cell::text(h.worst_lag.as_ref().map_or_else(
                    || "–".to_owned(),
                    |(phase, lag)| format!("{} ({phase})", format_millis(*lag)),
                )),
                Cell::text(h.dropped.to_string()),
                valid,
            ]
        })
        .collect();
    let header = ["run", "worst lag p99 ms (phase)", "dropped", "valid"];
    out.push_str(&style.table(Table::new(&header).left(&[3]).rows(rows)));
}

fn verdicts(out: &mut String, runs: &[ReportRun], style: Style) {
    if runs.iter().all(|run| run.verdict.is_none()) {
        return;
    }
    style.heading(out, "verdict");
    let lines: Vec<String> = runs
        .iter()
        .map(|run| match &run.verdict {
            Some(v) => {
                let word = outcome_word(Some(v), Style::Terminal);
                let rule = v
                    .rule_fired
                    .strip_prefix(&format!("{word}: "))
                    .unwrap_or(&v.rule_fired);
                format!(
                    "{}: {}: {}",
                    style.name(&run.label),
                    outcome_word(Some(v), style),
                    style.text(rule)
                )
            }
            None => format!("{}: no verdict", style.name(&run.label)),
        })
        .collect();
    style.list(out, &lines);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TargetKind;
    use crate::result::result_from_str;
    use serde_json::{Value, json};
    use test_case::test_case;

    /// Two real runs of the demo service (tests/fixtures/report/README.md): without and with
    /// `DEMO_CPU_US=6000`, the second soaked at the first's knee and compared with it.
    const BEFORE: &str = include_str!("../../../tests/fixtures/report/before.json");
    const AFTER: &str = include_str!("../../../tests/fixtures/report/after.json");

    fn value(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    /// The run of a result as its file would hold it (tests change the JSON to make variants).
    fn run(label: &str, result: &Value) -> ReportRun {
        let path = PathBuf::from(format!("runs/{label}/result.json"));
        read_text(label, &path, &result.to_string()).unwrap()
    }

    fn read_text(label: &str, path: &Path, text: &str) -> Result<ReportRun, ReportError> {
        let result = result_from_str(text).map_err(|e| refused(path, e.at(path)))?;
        ReportRun::from_result(label.to_owned(), path, &result)
    }

    fn before_and_after() -> Vec<ReportRun> {
        vec![run("before", &value(BEFORE)), run("after", &value(AFTER))]
    }

    /// What varies between regenerated fixtures: dates, commits and config hashes.
    macro_rules! assert_redacted_snapshot {
        ($name:expr, $text:expr) => {
            insta::with_settings!({filters => vec![
                (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "[date]"),
                (r"\b[0-9a-f]{7}\b", "[commit]"),
                (r"config [0-9a-f]{12}", "config [hash]"),
            ]}, {
                insta::assert_snapshot!($name, $text);
            });
        };
    }

    #[test]
    fn two_runs_side_by_side_in_markdown() {
        assert_redacted_snapshot!(
            "before_and_after_markdown",
            render_markdown(&before_and_after())
        );
    }

    #[test]
    fn a_paired_run_reads_renders_and_shows_its_mode() {
        let paired = crate::result::testing::paired();
        let text = serde_json::to_string(&paired).unwrap();
        let path = PathBuf::from("runs/paired/result.json");
        let runs = vec![
            run("before", &value(BEFORE)),
            read_text("paired", &path, &text).unwrap(),
        ];
        let terminal = render_terminal(&runs);
        assert!(
            terminal.contains(
                "  paired: paired mode, decided by paired blocks: base `6ae25712e4ad` (built \
                 from the merge-base), 3 of 4 pair(s) used"
            ),
            "{terminal}"
        );
        let markdown = render_markdown(&runs);
        assert!(
            markdown.contains(
                "- **paired**: paired mode, decided by paired blocks: base `6ae25712e4ad`"
            ),
            "{markdown}"
        );
        // Stored runs have no mode line.
        assert!(!render_markdown(&before_and_after()).contains("paired mode"));
    }

    /// A probe of each run: the second reads ten times the blocks per commit (a missing index),
    /// and its waiting connections grew through the soak.
    #[test]
    fn the_probes_of_each_run_are_compared_with_the_first() {
        use crate::measure::probe::{POSTGRES_SERIES, ProbeRecorder};
        let probe = |blocks_per_commit: f64, waiting_growth: f64| {
            let mut r = ProbeRecorder::new("db", "postgres", "db", POSTGRES_SERIES);
            for t in 0..=20 {
                let reading: Vec<f64> = POSTGRES_SERIES
                    .iter()
                    .map(|s| match s.name {
                        "xact_commit" => f64::from(t) * 50.0,
                        "blks_hit" => f64::from(t) * 50.0 * blocks_per_commit,
                        "connections_waiting" => f64::from(t) * waiting_growth,
                        _ => 0.0,
                    })
                    .collect();
                r.push(f64::from(t), &reading);
            }
            let mut record = r.finish();
            record.fit_soak_slopes(0.0, 20.0);
            serde_json::to_value(vec![record]).unwrap()
        };
        let mut before = value(BEFORE);
        before["probes"] = probe(26.0, 0.0);
        let mut after = value(AFTER);
        after["probes"] = probe(260.0, 0.1);
        let statement = |blocks_per_call: f64| {
            serde_json::json!([{
                "query": "SELECT id FROM transactions WHERE account_id = $1",
                "calls": 40,
                "blocks": (blocks_per_call * 40.0) as u64,
                "blocks_per_call": blocks_per_call,
                "mean_ms": 1.0
            }])
        };
        before["probes"][0]["statements"] = statement(4.0);
        after["probes"][0]["statements"] = statement(2_400.0);
        let runs = vec![run("before", &before), run("after", &after)];
        let terminal = render_terminal(&runs);
        let row = |label: &str| {
            terminal
                .lines()
                .find(|l| l.starts_with("db ") && l.contains(&format!(" {label} ")))
                .unwrap_or_else(|| panic!("no probe row of {label} in\n{terminal}"))
                .to_owned()
        };
        let before_row = row("before");
        assert!(before_row.contains("50/s"), "{before_row}");
        assert!(before_row.contains(" 26 "), "{before_row}");
        let after_row = row("after");
        assert!(after_row.contains(" 260 "), "{after_row}");
        assert!(
            after_row.contains("10×") || after_row.contains("10.0×"),
            "{after_row}"
        );
        assert!(
            after_row.contains("connections_waiting grows 6"),
            "{after_row}"
        );
        let statement_row = terminal
            .lines()
            .find(|l| l.contains(" after ") && l.contains("FROM transactions"))
            .unwrap_or_else(|| panic!("no statement row in\n{terminal}"));
        assert!(statement_row.contains("2400"), "{statement_row}");
        assert!(statement_row.contains("600×"), "{statement_row}");
        let markdown = render_markdown(&runs);
        assert!(markdown.contains("### Probes"), "{markdown}");
        // Without probes there is no section.
        assert!(!render_terminal(&before_and_after()).contains("probes"));
    }

    #[test]
    fn two_runs_side_by_side_on_the_terminal() {
        assert_redacted_snapshot!(
            "before_and_after_terminal",
            render_terminal(&before_and_after())
        );
    }

    #[test]
    fn three_runs_are_each_compared_with_the_first() {
        let mut runs = before_and_after();
        runs.push(run("again", &value(AFTER)));
        let out = render_terminal(&runs);
        assert!(
            out.starts_with("cargo-loadgate report: 3 runs side by side\n"),
            "{out}"
        );
        // The capacity table: the first run is the reference, the others a ratio to it; the
        // first knee is a lower bound (nothing broke), so the ratio is an upper bound.
        let capacity: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("run ") || !l.contains("knee req/s"))
            .take(4)
            .collect();
        assert_eq!(capacity.len(), 4, "{out}");
        assert!(
            capacity[1].starts_with("before") && capacity[1].ends_with('–'),
            "{out}"
        );
        for row in &capacity[2..] {
            assert!(row.contains("62.5") && row.ends_with("≤ 0.33×"), "{row}");
        }
        // Every operation has a row per run.
        let landing = out
            .lines()
            .skip_while(|l| !l.starts_with("landing"))
            .take(3);
        let runs_shown: Vec<&str> = landing
            .map(|l| {
                l.split_whitespace()
                    .find(|w| ["before", "after", "again"].contains(w))
            })
            .map(Option::unwrap_or_default)
            .collect();
        assert_eq!(runs_shown, ["before", "after", "again"], "{out}");
        // The same workload throughout: no note about differing loads.
        assert!(!out.contains("note:"), "{out}");
    }

    #[test]
    fn one_run_has_no_ratios() {
        let out = render_terminal(&[run("before", &value(BEFORE))]);
        assert!(out.starts_with("cargo-loadgate report: one run\n"), "{out}");
        assert!(!out.contains("vs before") && !out.contains('×'), "{out}");
    }

    #[test]
    fn differing_workloads_are_shown_with_a_note() {
        let mut other = value(AFTER);
        other["config_hash"] = json!("f".repeat(64));
        let mut resoaked = value(AFTER);
        let phases = resoaked["phases"].as_array_mut().unwrap();
        let soak = phases.iter_mut().find(|p| p["name"] == "soak").unwrap();
        soak["schedule_hash"] = json!("0".repeat(64));
        let runs = [
            run("before", &value(BEFORE)),
            run("other", &other),
            run("resoaked", &resoaked),
        ];
        let out = render_terminal(&runs);
        assert!(
            out.contains(
                "note: other ran another configuration than before (config ffffffffffff vs "
            ),
            "{out}"
        );
        assert!(
            out.contains("their workloads or limits differ, so their loads are not the same"),
            "{out}"
        );
        assert!(
            out.contains(
                "note: resoaked ran other schedules than before in soak: the loads there are not the same"
            ),
            "{out}"
        );
        // They are still shown in full.
        assert!(
            out.contains("\nother ") && out.contains("\nresoaked "),
            "{out}"
        );
        let md = render_markdown(&runs);
        assert!(
            md.contains("\n> ⚠️ resoaked ran other schedules than before in soak"),
            "{md}"
        );
    }

    #[test]
    fn a_run_without_a_soak_says_why_and_the_others_keep_theirs() {
        let mut skipped = value(AFTER);
        skipped["soak"] = Value::Null;
        skipped["soak_skipped"] = json!("the ramp was invalid");
        let runs = [run("before", &value(BEFORE)), run("skipped", &skipped)];
        let out = render_terminal(&runs);
        assert!(
            out.contains("\n  skipped: no soak (the ramp was invalid)\n"),
            "{out}"
        );
        let soak_rows = out
            .lines()
            .filter(|l| l.contains("% of its own knee"))
            .count();
        assert_eq!(soak_rows, 1, "{out}");
        assert!(!out.contains("\n      skipped "), "{out}");
        let slopes = out.lines().find(|l| l.starts_with("slope per s")).unwrap();
        assert!(slopes.ends_with("before"), "{slopes}");

        let mut lone = value(BEFORE);
        lone["soak"] = Value::Null;
        let md = render_markdown(&[run("lone", &lone)]);
        assert!(md.contains("### Soak\n\n- **lone**: no soak\n"), "{md}");
        assert!(!md.contains("slope per s"), "{md}");
    }

    #[test]
    fn an_unfinished_run_and_another_machine_are_noted() {
        let mut unfinished = value(AFTER);
        unfinished["status"] = json!("running");
        unfinished["verdict"] = Value::Null;
        unfinished["environment"]["cores"] = json!(64);
        let out = render_terminal(&[run("before", &value(BEFORE)), run("late", &unfinished)]);
        assert!(out.contains("note: late ran on another machine than before (AMD EPYC, 64 cores vs AMD EPYC, 2 cores)"), "{out}");
        assert!(
            out.contains(
                "note: late did not finish: it shows the phases measured before it stopped"
            ),
            "{out}"
        );
        assert!(out.contains("\n  late: no verdict\n"), "{out}");
    }

    #[test_case(|r: &mut Value| r["format_version"] = json!(2),
        "result.json was written in result format 2, newer than 1"; "newer format")]
    #[test_case(|r: &mut Value| *r = json!({"entries": []}),
        "result.json is not a run result: it has no format_version"; "not a result")]
    #[test_case(|r: &mut Value| r["ramp"] = Value::Null,
        "result.json has no ramp"; "no ramp")]
    #[test_case(|r: &mut Value| r["ramp"]["steps"] = json!("x"),
        "the `ramp.steps` in result.json is not readable"; "broken ramp")]
    #[test_case(|r: &mut Value| r["verdict"] = json!({"outcome": "maybe"}),
        "the `verdict.outcome` in result.json is not readable"; "broken verdict")]
    #[test_case(|r: &mut Value| {
            let soak = r["phases"].as_array_mut().unwrap().last_mut().unwrap();
            soak["operations"] = json!(3);
        }, "the `phases[6]` in result.json is not readable"; "broken soak phase")]
    #[test_case(|r: &mut Value| r["status"] = json!("paused"),
        "the `status` in result.json is not readable"; "unknown status")]
    fn unusable_results_are_refused_naming_the_file(break_it: fn(&mut Value), expected: &str) {
        let mut result = value(AFTER);
        break_it(&mut result);
        let err = read_text("x", Path::new("result.json"), &result.to_string()).unwrap_err();
        assert!(err.to_string().starts_with(expected), "{err}");
    }

    #[test]
    fn text_that_is_not_json_is_refused_as_such() {
        let err = read_text("x", Path::new("result.json"), "{\"format_version\": 1,").unwrap_err();
        assert!(matches!(err, ReportError::NotJson { .. }), "{err}");
        // The cause is the one reader's error, which names the file, line and column.
        let cause = std::error::Error::source(&err)
            .expect("a cause")
            .to_string();
        assert!(
            cause.starts_with("result.json:1:") && cause.contains("is not a readable run result"),
            "{cause}"
        );
        let err = read_text("x", Path::new("result.json"), "[1, 2]").unwrap_err();
        assert!(matches!(err, ReportError::NotAResult { .. }), "{err}");
    }

    #[test_case(&["a/loadgate/result.json", "b/loadgate/result.json"], &["a/loadgate", "b/loadgate"]; "shared directory names")]
    #[test_case(&["tier-vm/result.json", "tier-cluster/result.json"], &["tier-vm", "tier-cluster"]; "directories")]
    #[test_case(&["result.json", "../x/result.json"], &["result", "x"]; "no directory")]
    #[test_case(&["runs/a.json", "runs/b.json"], &["a", "b"]; "one directory")]
    #[test_case(&["a/runs/x.json", "b/runs/x.json", "b/runs/y.json"], &["a/runs/x.json", "b/runs/x.json", "b/runs/y.json"]; "neither tells")]
    #[test_case(&["r/result.json", "r/result.json"], &["r/result.json #1", "r/result.json #2"]; "the same file twice")]
    fn runs_are_named_after_their_directories(paths: &[&str], labels: &[&str]) {
        let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        assert_eq!(run_labels(&paths), labels);
    }

    #[test]
    fn a_knee_bound_leaves_the_ratio_open_in_its_direction() {
        assert_eq!(Knee::At(50.0).ratio_to(Knee::At(100.0)), "0.50×");
        assert_eq!(Knee::At(50.0).ratio_to(Knee::AtLeast(100.0)), "≤ 0.50×");
        assert_eq!(Knee::AtLeast(150.0).ratio_to(Knee::At(100.0)), "≥ 1.50×");
        assert_eq!(
            Knee::AtLeast(150.0).ratio_to(Knee::AtLeast(100.0)),
            "unknown"
        );
        assert_eq!(Knee::None.ratio_to(Knee::At(100.0)), "–");
        assert_eq!(Knee::At(100.0).ratio_to(Knee::None), "–");
        assert_eq!(Knee::AtLeast(43.0).cell(false), "≥ 43.0 (invalid ramp)");
        assert_eq!(Knee::None.cell(true), "none held");
    }

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(times(1.234, 1.0), "1.23×");
        assert_eq!(times(12.34, 1.0), "12.3×");
        assert_eq!(times(1234.0, 1.0), "1234×");
        assert_eq!(times(1.0, 0.0), "–");
    }

    #[test_case(0, "1970-01-01 00:00 UTC"; "epoch")]
    #[test_case(951_868_740_000, "2000-02-29 23:59 UTC"; "leap day")]
    #[test_case(1_795_990_661_839, "2026-11-29 22:17 UTC"; "a run")]
    fn times_are_shown_in_utc(unix_ms: u64, expected: &str) {
        assert_eq!(format_utc(unix_ms), expected);
    }

    #[test]
    fn targets_are_described_with_their_limits() {
        let process = result_from_str(AFTER).unwrap().target.unwrap();
        let container = TargetInfo {
            kind: TargetKind::Container,
            cpus: Some(1.0),
            memory_bytes: Some(268_435_456),
            cpuset: Some("1".to_owned()),
            ..process.clone()
        };
        // The limit as the config writes it (`memory = "256MiB"`).
        assert_eq!(
            describe_target(Some(&container)),
            "container, 1 CPU, 256MiB, cores 1"
        );
        let big = TargetInfo {
            cpus: Some(2.5),
            memory_bytes: Some(2_147_483_648),
            cpuset: None,
            ..container
        };
        assert_eq!(describe_target(Some(&big)), "container, 2.5 CPUs, 2GiB");
        let hosted = TargetInfo {
            network: Some(crate::targets::NetworkInfo {
                path: crate::targets::NetworkPath::Host,
                asked: crate::config::NetworkChoice::Auto,
                fallback: None,
                binds_every_interface: Some(false),
            }),
            ..big.clone()
        };
        assert_eq!(
            describe_target(Some(&hosted)),
            "container, 2.5 CPUs, 2GiB, host network"
        );
        let url = TargetInfo {
            kind: TargetKind::Url,
            cpuset: None,
            ..process
        };
        assert_eq!(describe_target(Some(&url)), "url");
        assert_eq!(describe_target(None), "target unknown");
    }
}
