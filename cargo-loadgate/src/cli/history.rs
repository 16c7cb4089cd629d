//! `cargo loadgate history`: the stored results along the first parents of a branch, each
//! commit's figures with their intervals, where the series breaks, and each metric's change
//! points (issue 18, item 2). The walk is `baseline::walk_history`, the figures and change points
//! `compare::history`, the charts `report::charts::render_history`; this file gathers the accepts,
//! prints the listing and writes `history.json`, the charts and `history.md`.

use super::gate::accepts_of;
use super::render::{render_error, render_failure};
use super::{ExitCode, HistoryOpts};
use crate::baseline::{
    BaselineError, Candidate, HistoryWalk, Mismatch, StoreSpec, WalkRequest, short, walk_history,
};
use crate::compare::{
    CommitInput, HistoryRequest, RunFigures, WalkHeader, history, metric_label,
    parse_history_metric,
};
use crate::report::Table;
use crate::report::{history_chart_name, render_history};
use crate::result::{
    BreakReason, ConfigHashes, HistoryResult, MeasurementMode, Metric, MetricHistory, SeriesKey,
    write_file_atomic, write_json_atomic,
};
use std::path::{Path, PathBuf};

/// The file the history document is written to in the out-dir.
pub const HISTORY_JSON: &str = "history.json";
/// The Markdown of the change points, in the out-dir (also appended to `$GITHUB_STEP_SUMMARY`).
pub const HISTORY_MARKDOWN: &str = "history.md";

/// Runs `cargo loadgate history` and returns its exit code: 0 with a listing, 12
/// ([`ExitCode::NO_BASELINE`]) when no walked commit has a stored result of the config, 2 for a
/// bad revision, metric or operation.
pub fn run(opts: &HistoryOpts) -> i32 {
    let mut metrics = Vec::new();
    for word in &opts.metrics {
        match parse_history_metric(word) {
            Ok(m) if !metrics.contains(&m) => metrics.push(m),
            Ok(_) => {}
            Err(why) => {
                eprintln!("error: {why}");
                return ExitCode::USAGE;
            }
        }
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = match crate::config::load(&opts.config.load_opts(cwd.clone())) {
        Ok(config) => config,
        Err(e) => {
            eprint!("{}", render_error(&e));
            return ExitCode::USAGE;
        }
    };
    let baseline_error = |e: BaselineError| {
        eprint!("{}", render_failure(&e, e.hint().as_deref()));
        ExitCode::for_baseline(e.kind())
    };
    let repo = match super::baseline_cmd::repo_root() {
        Ok(repo) => repo,
        Err(e) => return baseline_error(e),
    };
    let store = match StoreSpec::parse(&opts.baseline_store) {
        Ok(spec) => spec.open(&repo),
        Err(e) => return baseline_error(e),
    };
    let hashes = ConfigHashes::of(&config, MeasurementMode::Stored);
    let request = WalkRequest {
        rev: &opts.rev,
        since: opts.since.as_deref(),
        limit: opts.limit,
        config_hashes: &hashes,
    };
    let walk = match walk_history(&repo, store.as_ref(), &request) {
        Ok(walk) => walk,
        Err(e) => return baseline_error(e),
    };
    if walk.anchor.is_none() {
        eprint!("{}", nothing_stored(&walk, &hashes));
        return ExitCode::NO_BASELINE;
    }
    let (inputs, warnings) = inputs(&walk, &config.accept);
    let header = WalkHeader {
        store: walk.store.clone(),
        rev: walk.rev.clone(),
        head: walk.head.clone(),
        since: walk.since.as_ref().map(|s| s.0.clone()),
        limited: walk.limited,
        series: walk.anchor.as_ref().map(|a| SeriesKey {
            config_hash: a.config_hash.clone(),
            fingerprint_key: a.fingerprint_key.clone(),
            anchor: a.commit.clone(),
        }),
    };
    let request = HistoryRequest {
        metrics,
        operation: opts.operation.clone(),
        ..HistoryRequest::default()
    };
    let doc = match history(header, &inputs, &request, warnings) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::USAGE;
        }
    };
    let out_dir = super::run::out_dir(opts.out_dir.as_deref(), &config, &cwd, Some("history"));
    let new_since = match &opts.new_since {
        None => None,
        Some(rev) => match crate::baseline::resolve_commit(&repo, rev) {
            Ok(c) => Some(c),
            Err(e) => return baseline_error(e),
        },
    };
    if let Err(e) = write_outputs(&out_dir, &doc, new_since.as_deref()) {
        eprint!("{}", render_error(e.as_ref()));
        return ExitCode::OTHER_ERROR;
    }
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print!("{}", render_listing(&doc));
        eprintln!("       Wrote {}", out_dir.display());
    }
    ExitCode::PASS
}

/// Each walked commit's accepts and figures, and the warnings about malformed trailers.
fn inputs(
    walk: &HistoryWalk,
    entries: &[crate::config::AcceptConfig],
) -> (Vec<CommitInput>, Vec<String>) {
    let mut warnings = Vec::new();
    let inputs = walk
        .commits
        .iter()
        .map(|w| {
            let accepts = accepts_of(std::slice::from_ref(&w.trailers), entries);
            warnings.extend(accepts.warnings);
            let figures = match &w.entry {
                Ok(entry) => match entry.result.get() {
                    Ok(result) => Ok(RunFigures::from_result(result, None)),
                    Err(e) => Err((BreakReason::Unreadable, e.to_string())),
                },
                Err(mismatch) => Err((
                    break_reason(mismatch),
                    Candidate {
                        commit: w.trailers.commit.clone(),
                        distance: 0,
                        mismatch: mismatch.clone(),
                    }
                    .to_string(),
                )),
            };
            CommitInput {
                commit: w.trailers.commit.clone(),
                accepts: accepts.accepts,
                figures,
            }
        })
        .collect();
    (inputs, warnings)
}

/// The series' word for why a commit's stored result was passed over.
fn break_reason(mismatch: &Mismatch) -> BreakReason {
    match mismatch {
        Mismatch::NoBaseline => BreakReason::NoResult,
        Mismatch::DifferentConfig { .. } | Mismatch::DifferentSchedule => {
            BreakReason::ConfigChanged
        }
        Mismatch::DifferentEnvironment { .. } => BreakReason::FingerprintChanged,
        Mismatch::NewerFormat { .. } | Mismatch::Unreadable { .. } => BreakReason::Unreadable,
    }
}

/// What `history` says when no walked commit has a result of the config: where it looked.
fn nothing_stored(walk: &HistoryWalk, hashes: &ConfigHashes) -> String {
    let stored = walk
        .commits
        .iter()
        .filter(|c| !matches!(c.entry, Err(Mismatch::NoBaseline)))
        .count();
    let range = match (walk.commits.first(), &walk.since) {
        (Some(first), _) => format!(
            "{} commit(s) from {} ({}) back to {}",
            walk.commits.len(),
            walk.rev,
            short(&walk.head),
            short(&first.trailers.commit)
        ),
        (None, _) => format!("no commits from {}", walk.rev),
    };
    let mut out = format!(
        "error: no stored results of this config in {}\n  looked at: {range}, first parents only{}\n",
        walk.store,
        if walk.limited {
            " (stopped at --limit)"
        } else {
            ""
        }
    );
    out.push_str(&format!(
        "  config hash: {}\n",
        hashes.current.get(..12).unwrap_or(&hashes.current)
    ));
    if stored > 0 {
        out.push_str(&format!(
            "  {stored} of them have results of another config or that cannot be read\n"
        ));
    }
    out.push_str(
        "hint: store baselines on the main branch (`cargo loadgate run --save-baseline`), fetch \
         the notes (`git fetch origin refs/notes/loadgate:refs/notes/loadgate`), or name the \
         store with --baseline-store\n",
    );
    out
}

/// Writes `history.json`, one chart per metric with points, and `history.md` (appended to
/// `$GITHUB_STEP_SUMMARY` when that is set) into `dir`.
fn write_outputs(
    dir: &Path,
    doc: &HistoryResult,
    new_since: Option<&str>,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    write_json_atomic(&dir.join(HISTORY_JSON), doc)?;
    for metric in &doc.metrics {
        let name = history_chart_name(metric);
        match render_history(doc, metric)? {
            Some(svg) => write_file_atomic(&dir.join(&name), svg.as_bytes())?,
            None => match std::fs::remove_file(dir.join(&name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            },
        }
    }
    let md = render_markdown(doc, new_since);
    write_file_atomic(&dir.join(HISTORY_MARKDOWN), md.as_bytes())?;
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(summary)?
            .write_all(md.as_bytes())?;
    }
    Ok(())
}

/// A point's figure in its metric's unit, with its interval.
fn figure(metric: &MetricHistory, commit: &str) -> String {
    let Some(p) = metric.points.iter().find(|p| p.commit == commit) else {
        return "-".to_owned();
    };
    match metric.metric {
        Metric::ErrorRate => format!(
            "{:.2}% ({:.2} … {:.2})",
            p.estimate * 100.0,
            p.low * 100.0,
            p.high * 100.0
        ),
        _ => format!("{:.2} ({:.2} … {:.2})", p.estimate, p.low, p.high),
    }
}

/// The column heading of a metric: its name and unit.
fn heading(metric: &MetricHistory) -> String {
    let unit = match metric.metric {
        Metric::ErrorRate => "%",
        _ => metric.unit.as_str(),
    };
    format!(
        "{} | {unit}",
        metric_label(metric.metric, metric.operation.as_deref())
    )
}

/// The listing people read: a row per commit (oldest first) with each metric's figure and
/// interval, where the series breaks, and the change points.
pub fn render_listing(doc: &HistoryResult) -> String {
    let mut header: Vec<String> = vec!["commit".to_owned(), "accepted".to_owned()];
    header.extend(doc.metrics.iter().map(heading));
    header.push("note".to_owned());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = doc
        .commits
        .iter()
        .map(|c| {
            let mut row = vec![
                short(&c.commit).to_owned(),
                if c.accepted { "yes" } else { "" }.to_owned(),
            ];
            row.extend(doc.metrics.iter().map(|m| {
                if c.in_series {
                    figure(m, &c.commit)
                } else {
                    String::new()
                }
            }));
            row.push(c.reason.map_or(String::new(), |r| r.phrase().to_owned()));
            row
        })
        .collect();
    let mut out = format!(
        "history of {} in {}, {} commit(s) along the first parents of {} ({}){}\n",
        doc.series.as_ref().map_or_else(String::new, |s| format!(
            "config {} on {}",
            s.config_hash.get(..12).unwrap_or(&s.config_hash),
            s.fingerprint_key
        )),
        doc.store,
        doc.commits.len(),
        doc.rev,
        short(&doc.head),
        if doc.limited {
            ", stopped at --limit"
        } else {
            ""
        }
    );
    out.push_str("figures with their 95% intervals (each run's own sampling error)\n");
    out.push_str(&Table::new(&header_refs).rows(&rows).terminal());
    for b in &doc.breaks {
        let span = if b.commits == 1 {
            short(&b.first).to_owned()
        } else {
            format!(
                "{}…{} ({} commits)",
                short(&b.first),
                short(&b.last),
                b.commits
            )
        };
        out.push_str(&format!(
            "series break at {span}: {} ({})\n",
            b.reason.phrase(),
            b.detail
        ));
    }
    let changes: Vec<&str> = doc
        .metrics
        .iter()
        .flat_map(|m| m.change_points.iter().map(|c| c.sentence.as_str()))
        .collect();
    if changes.is_empty() {
        out.push_str("change points: none found\n");
    } else {
        out.push_str("change points:\n");
        for c in changes {
            out.push_str(&format!("  {c}\n"));
        }
    }
    for w in &doc.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// The Markdown of the change points, for `$GITHUB_STEP_SUMMARY`: all of them, or with
/// `new_since` only those whose latest possible commit comes after that commit.
pub fn render_markdown(doc: &HistoryResult, new_since: Option<&str>) -> String {
    let position = |commit: &str| doc.commits.iter().position(|c| c.commit == commit);
    let after = new_since.and_then(position);
    let mut lines = Vec::new();
    for m in &doc.metrics {
        for c in &m.change_points {
            let new = match (after, position(&c.latest)) {
                (Some(cut), Some(at)) => at > cut,
                _ => true,
            };
            if new {
                lines.push(format!(
                    "- {}{}",
                    c.sentence,
                    if c.accepted { "" } else { " (not accepted)" }
                ));
            }
        }
    }
    let mut out = format!(
        "### cargo loadgate history\n\n{} commit(s) of {} read from {}.\n\n",
        doc.commits.len(),
        short(&doc.head),
        doc.store
    );
    if lines.is_empty() {
        out.push_str(if new_since.is_some() {
            "No new change points.\n"
        } else {
            "No change points.\n"
        });
    } else {
        out.push_str(&lines.join("\n"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Accept, AcceptScope, KneeBracket};

    /// Twelve commits of capacity 100, then 60 from the 8th (which accepts it); the 3rd has no
    /// result and the 1st another config.
    fn doc() -> HistoryResult {
        let id = |i: usize| format!("{:07x}{}", 0x1000000 + i, "0".repeat(33));
        let jitter = [
            1.0, 1.02, 0.0, 0.98, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.02,
        ];
        let inputs: Vec<CommitInput> = (0..12)
            .map(|i| {
                let capacity = if i >= 7 { 60.0 } else { 100.0 } * jitter[i];
                let knee = KneeBracket {
                    last_held_sessions_per_sec: Some(capacity / 1.05),
                    first_broke_sessions_per_sec: Some(capacity * 1.05),
                    generator_limit_sessions_per_sec: None,
                    invalid: None,
                };
                CommitInput {
                    commit: id(i),
                    accepts: if i == 7 {
                        vec![Accept {
                            scope: AcceptScope::Metric {
                                metric: Metric::Capacity,
                                operation: None,
                            },
                            amount: 0.5,
                            source: format!(
                                "`Loadgate-Accept: capacity -50%` in {}",
                                short(&id(i))
                            ),
                            reason: "a cache".to_owned(),
                        }]
                    } else {
                        Vec::new()
                    },
                    figures: match i {
                        0 => Err((
                            BreakReason::ConfigChanged,
                            "baseline at 1000000 was taken with a different workload".to_owned(),
                        )),
                        2 => Err((
                            BreakReason::NoResult,
                            "no baseline stored for 1000002".to_owned(),
                        )),
                        _ => Ok(RunFigures {
                            commit: None,
                            phase: None,
                            knee: Some(knee),
                            rss: Vec::new(),
                            rss_slope: None,
                            calibration: None,
                            calibration_drift: None,
                            production_sessions_per_sec: None,
                        }),
                    },
                }
            })
            .collect();
        let header = WalkHeader {
            store: "dir:/cache/baselines".to_owned(),
            rev: "HEAD".to_owned(),
            head: id(11),
            since: None,
            limited: false,
            series: Some(SeriesKey {
                config_hash: "d27a6754ab6d0000".to_owned(),
                fingerprint_key: "14ade8fe3c4aeb21".to_owned(),
                anchor: id(11),
            }),
        };
        let request = HistoryRequest {
            metrics: vec![Metric::Capacity, Metric::ErrorRate],
            ..HistoryRequest::default()
        };
        history(header, &inputs, &request, vec!["a warning".to_owned()]).unwrap()
    }

    /// What a person reads: the listing with the break and the accepted change point, and the
    /// Markdown for the step summary (all of them, then only those after a commit).
    #[test]
    fn the_listing_and_the_markdown_read_well() {
        let doc = doc();
        insta::assert_snapshot!("history_listing", render_listing(&doc));
        insta::assert_snapshot!("history_markdown", render_markdown(&doc, None));
        let later = render_markdown(&doc, Some(&doc.commits[8].commit));
        assert!(later.contains("No new change points."), "{later}");
        let earlier = render_markdown(&doc, Some(&doc.commits[3].commit));
        assert!(earlier.contains("capacity fell"), "{earlier}");
    }

    #[test]
    fn mismatches_map_to_break_reasons() {
        assert_eq!(break_reason(&Mismatch::NoBaseline), BreakReason::NoResult);
        assert_eq!(
            break_reason(&Mismatch::DifferentSchedule),
            BreakReason::ConfigChanged
        );
        assert_eq!(
            break_reason(&Mismatch::DifferentEnvironment {
                differences: Vec::new()
            }),
            BreakReason::FingerprintChanged
        );
        assert_eq!(
            break_reason(&Mismatch::NewerFormat { found: 9 }),
            BreakReason::Unreadable
        );
    }
}
