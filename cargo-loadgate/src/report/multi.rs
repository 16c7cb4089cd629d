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
use crate::baseline::short;
use crate::cli::table;
use crate::compare::{FiguresError, RunFigures};
use crate::measure::{OperationSummary, PhaseSummary};
use crate::plan::{CapacitySource, RampOutcome, Slopes, SoakOutcome, format_rate};
use crate::result::RESULT_FORMAT_VERSION;
use crate::result::Verdict;
use crate::stats::SlopeEstimate;
use serde::Deserialize;
use serde_json::Value;
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
        /// The cause.
        #[source]
        source: serde_json::Error,
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
    #[error("the {part} in {} is not readable", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Which part: `ramp`, `soak`, `verdict`.
        part: &'static str,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// The soak's phase could not be read.
    #[error("the soak's measurement in {} is not readable", path.display())]
    Figures {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: FiguresError,
    },
}

/// One run of the report, read from its result and named.
#[derive(Clone, Debug)]
pub struct ReportRun {
    label: String,
    source: String,
    started_at_unix_ms: Option<u64>,
    status: String,
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
    /// Reads a run result in its JSON form, as written to `path`, and names it `label`.
    ///
    /// Refused: JSON that is not a run result, a newer format, a result without a ramp, and parts
    /// (ramp, soak, verdict, the soak's phase) that are not in the shape the format promises.
    pub fn from_json(label: String, path: &Path, result: &Value) -> Result<Self, ReportError> {
        let version = result["format_version"]
            .as_u64()
            .ok_or_else(|| ReportError::NotAResult {
                path: path.to_owned(),
            })?;
        if version > u64::from(RESULT_FORMAT_VERSION) {
            return Err(ReportError::NewerFormat {
                path: path.to_owned(),
                found: version,
            });
        }
        let unreadable = |part: &'static str| {
            move |source| ReportError::Unreadable {
                path: path.to_owned(),
                part,
                source,
            }
        };
        if result["ramp"].is_null() {
            return Err(ReportError::NoRamp {
                path: path.to_owned(),
            });
        }
        let ramp = RampOutcome::deserialize(&result["ramp"]).map_err(unreadable("ramp"))?;
        // Before the soak's figures, which read the whole result typed.
        let verdict = match &result["verdict"] {
            Value::Null => None,
            value => Some(Verdict::deserialize(value).map_err(unreadable("verdict"))?),
        };
        let soak = match &result["soak"] {
            Value::Null => None,
            value => {
                let outcome = SoakOutcome::deserialize(value).map_err(unreadable("soak"))?;
                let figures =
                    RunFigures::from_json(result, Some(&outcome.phase)).map_err(|source| {
                        ReportError::Figures {
                            path: path.to_owned(),
                            source,
                        }
                    })?;
                Some(Soak {
                    summary: figures.phase.map(|p| p.summary()),
                    outcome,
                })
            }
        };
        let text = |v: &Value| v.as_str().unwrap_or("?").to_owned();
        let schedules = result["phases"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .map(|p| (text(&p["name"]), text(&p["schedule_hash"])))
            .collect();
        let commit = result["git"]["commit"]
            .as_str()
            .map(|c| (short(c).to_owned(), result["git"]["dirty"] != false));
        let environment = &result["environment"];
        let machine = format!(
            "{}, {} cores",
            text(&environment["cpu_model"]),
            environment["cores"].as_u64().unwrap_or(0)
        );
        let health = health(&ramp, soak.as_ref(), result["valid"].as_bool());
        Ok(Self {
            label,
            source: path.display().to_string(),
            started_at_unix_ms: result["started_at_unix_ms"].as_u64(),
            status: text(&result["status"]),
            commit,
            profile: text(&result["profile"]),
            target: describe_target(&result["target"]),
            machine,
            config_hash: text(&result["config_hash"]),
            schedules,
            ramp,
            soak,
            soak_skipped: result["soak_skipped"].as_str().map(str::to_owned),
            health,
            verdict,
        })
    }
}

fn health(ramp: &RampOutcome, soak: Option<&Soak>, valid: Option<bool>) -> Health {
    let mut phases: Vec<(String, Duration, u64, bool)> = ramp
        .steps
        .iter()
        .map(|s| (s.phase.clone(), s.lag_p99, s.dropped, s.valid))
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

/// `container, 1 CPU, 256 MiB, cores 1`, `process, cores 1`, `url`.
fn describe_target(target: &Value) -> String {
    let Some(kind) = target["kind"].as_str() else {
        return "target unknown".to_owned();
    };
    let mut parts = vec![kind.to_owned()];
    if let Some(cpus) = target["cpus"].as_f64() {
        parts.push(format!("{cpus} CPU{}", if cpus > 1.0 { "s" } else { "" }));
    }
    if let Some(bytes) = target["memory_bytes"].as_u64() {
        parts.push(format_size(bytes));
    }
    if let Some(cpuset) = target["cpuset"].as_str() {
        parts.push(format!("cores {cpuset}"));
    }
    parts.join(", ")
}

/// A memory limit for people: `256 MiB`, `2 GiB`.
fn format_size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * MIB;
    if bytes >= GIB && bytes.is_multiple_of(GIB) {
        format!("{} GiB", bytes / GIB)
    } else if bytes >= MIB {
        format!("{:.0} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{bytes} B")
    }
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

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// The Markdown and terminal renderings differ only in how they draw a table, emphasise a name
/// and set off a note; the content is built once.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Terminal,
    Markdown,
}

impl Style {
    /// A table: the first column left-aligned, the rest right-aligned (numbers), except the
    /// columns `left` names.
    fn table(self, header: &[&str], left: &[usize], rows: &[Vec<String>]) -> String {
        match self {
            Self::Terminal => table(header, rows),
            Self::Markdown => {
                let mut out = String::new();
                let line = |cells: &mut dyn Iterator<Item = String>| {
                    let cells: Vec<String> = cells.collect();
                    format!("| {} |\n", cells.join(" | "))
                };
                out.push_str(&line(&mut header.iter().map(|h| escape(h))));
                out.push_str(&line(&mut (0..header.len()).map(|i| {
                    if i == 0 || left.contains(&i) {
                        "---".to_owned()
                    } else {
                        "---:".to_owned()
                    }
                })));
                for row in rows {
                    out.push_str(&line(&mut row.iter().map(|c| escape(c))));
                }
                out
            }
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
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|run| {
            let commit = match (&run.commit, style) {
                (Some((c, dirty)), Style::Terminal) => format!("{c}{}", dirty_mark(*dirty)),
                (Some((c, dirty)), Style::Markdown) => format!("`{c}`{}", dirty_mark(*dirty)),
                (None, _) => "none".to_owned(),
            };
            vec![
                run.label.clone(),
                commit,
                run.profile.clone(),
                run.target.clone(),
                run.started_at_unix_ms
                    .map_or_else(|| "?".to_owned(), format_utc),
                outcome_word(run.verdict.as_ref(), style),
                run.source.clone(),
            ]
        })
        .collect();
    let columns = [
        "run", "commit", "profile", "target", "started", "verdict", "file",
    ];
    match style {
        Style::Terminal => {
            // Text columns read better left-aligned than the numeric tables are.
            let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
            for row in &rows {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            out.push('\n');
            for row in std::iter::once(columns.map(str::to_owned).to_vec()).chain(rows) {
                let line: Vec<String> = row
                    .iter()
                    .zip(&widths)
                    .map(|(cell, w)| format!("{cell:<w$}"))
                    .collect();
                let _ = writeln!(out, "{}", line.join("  ").trim_end());
            }
        }
        Style::Markdown => {
            out.push('\n');
            out.push_str(&style.table(&columns, &[1, 2, 3, 4, 5, 6], &rows));
        }
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
        match run.status.as_str() {
            "complete" => {}
            "running" => notes.push(format!(
                "{} did not finish: it shows the phases measured before it stopped",
                run.label
            )),
            "target-failed" => notes.push(format!(
                "{}: the target failed during the run; it shows the phases measured before",
                run.label
            )),
            other => notes.push(format!("{}: status {other}", run.label)),
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
    out.push_str(&style.table(&header, &[], &rows));
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
    out.push_str(&style.table(
        &[
            "run",
            "load point",
            "offered req/s",
            "achieved req/s",
            "windows",
            "requests",
            "error rate",
        ],
        &[1],
        &rows,
    ));
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
                    row.push(ms(op.p50));
                    if compared {
                        row.push(ratio(|o| o.p50));
                    }
                    row.push(ms(op.p99));
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
    out.push_str(&style.table(&header, &[1], &rows));
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
    out.push_str(&style.table(&header, &[], &rows));
}

fn generator_health(out: &mut String, runs: &[ReportRun], style: Style) {
    style.heading(out, "generator health");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|run| {
            let h = &run.health;
            let valid = match (h.valid, h.invalid.is_empty()) {
                (Some(true), _) | (None, true) => "yes".to_owned(),
                (_, true) => "no".to_owned(),
                (_, false) => format!("no: {}", h.invalid.join(", ")),
            };
            let valid = match (style, h.valid) {
                (Style::Markdown, Some(false)) => format!("**{valid}**"),
                _ => valid,
            };
            vec![
                run.label.clone(),
                h.worst_lag.as_ref().map_or_else(
                    || "–".to_owned(),
                    |(phase, lag)| format!("{} ({phase})", ms(*lag)),
                ),
                h.dropped.to_string(),
                valid,
            ]
        })
        .collect();
    out.push_str(&style.table(
        &["run", "worst lag p99 ms (phase)", "dropped", "valid"],
        &[3],
        &rows,
    ));
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
    use serde_json::json;
    use test_case::test_case;

    /// Two real runs of the demo service (tests/fixtures/report/README.md): without and with
    /// `DEMO_CPU_US=6000`, the second soaked at the first's knee and compared with it.
    const BEFORE: &str = include_str!("../../../tests/fixtures/report/before.json");
    const AFTER: &str = include_str!("../../../tests/fixtures/report/after.json");

    fn value(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    fn run(label: &str, result: &Value) -> ReportRun {
        let path = PathBuf::from(format!("runs/{label}/result.json"));
        ReportRun::from_json(label.to_owned(), &path, result).unwrap()
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
        "the ramp in result.json is not readable"; "broken ramp")]
    #[test_case(|r: &mut Value| r["verdict"] = json!({"outcome": "maybe"}),
        "the verdict in result.json is not readable"; "broken verdict")]
    #[test_case(|r: &mut Value| {
            let soak = r["phases"].as_array_mut().unwrap().last_mut().unwrap();
            soak["operations"] = json!(3);
        }, "the soak's measurement in result.json is not readable"; "broken soak phase")]
    fn unusable_results_are_refused_naming_the_file(break_it: fn(&mut Value), expected: &str) {
        let mut result = value(AFTER);
        break_it(&mut result);
        let err =
            ReportRun::from_json("x".to_owned(), Path::new("result.json"), &result).unwrap_err();
        assert!(err.to_string().starts_with(expected), "{err}");
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
        let container = json!({"kind": "container", "cpus": 1.0, "memory_bytes": 268_435_456_u64, "cpuset": "1"});
        assert_eq!(
            describe_target(&container),
            "container, 1 CPU, 256 MiB, cores 1"
        );
        let big = json!({"kind": "container", "cpus": 2.5, "memory_bytes": 2_147_483_648_u64});
        assert_eq!(describe_target(&big), "container, 2.5 CPUs, 2 GiB");
        assert_eq!(describe_target(&json!({"kind": "url"})), "url");
        assert_eq!(describe_target(&Value::Null), "target unknown");
    }
}
