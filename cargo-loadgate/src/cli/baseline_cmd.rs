//! `cargo loadgate baseline save|show|list` and `cargo loadgate compare BASE.json HEAD.json`: the
//! stores and the verdict without running anything.

use super::{
    BaselineCommand, BaselineOpts, CompareOpts, ExitCode,
    gate::{render_leak, render_verdict},
    render::{render_error, render_failure},
};
use crate::baseline::{BaselineError, StoreSpec, StoredEntry, StoredResult, resolve_commit, short};
use crate::compare::{CompareOptions, compare_results};
use crate::config::GateConfig;
use crate::report::table;
use crate::result::{RunResult, VerdictOutcome, read_result};
use std::path::{Path, PathBuf};

/// Runs `cargo loadgate baseline …` and returns the exit code.
pub fn run(opts: &BaselineOpts) -> i32 {
    match run_inner(opts) {
        Ok(()) => ExitCode::PASS,
        Err(e) => {
            eprint!("{}", render_failure(&e, e.hint().as_deref()));
            ExitCode::for_baseline(e.kind())
        }
    }
}

fn run_inner(opts: &BaselineOpts) -> Result<(), BaselineError> {
    let repo = repo_root()?;
    let store = StoreSpec::parse(&opts.baseline_store)?.open(&repo);
    match &opts.command {
        BaselineCommand::List => {
            let commits = store.list()?;
            if commits.is_empty() {
                println!("no baselines in {}", store.describe());
            }
            for commit in commits {
                let entries = store.load(&commit)?.map_or(0, |n| n.entries.len());
                println!("{commit}  {entries} environment(s)");
            }
        }
        BaselineCommand::Show { rev, json } => {
            let commit = resolve_commit(&repo, rev.as_deref().unwrap_or("HEAD"))?;
            match store.load(&commit)? {
                None => println!("no baseline for {} in {}", short(&commit), store.describe()),
                Some(note) if *json => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&note).unwrap_or_default()
                    );
                }
                Some(note) => {
                    println!("baseline for {} in {}", short(&commit), store.describe());
                    let rows: Vec<Vec<String>> = note.entries.iter().map(entry_row).collect();
                    let unreadable: Vec<String> = note
                        .entries
                        .iter()
                        .filter_map(|e| {
                            let reason = e.result.get().err()?;
                            Some(format!(
                                "entry {} cannot be read: {reason}",
                                e.fingerprint_key
                            ))
                        })
                        .collect();
                    print!(
                        "{}",
                        table(
                            &[
                                "environment",
                                "config",
                                "profile",
                                "knee req/s",
                                "saved (unix ms)"
                            ],
                            &rows
                        )
                    );
                    for line in unreadable {
                        println!("{line}");
                    }
                }
            }
        }
        BaselineCommand::Save { from, allow_dirty } => {
            let result = match crate::result::read_result(from) {
                Ok(result) => StoredResult::new(&result),
                Err(crate::result::ReadError::Io { path, source }) => {
                    return Err(BaselineError::Io {
                        action: "read",
                        path,
                        source,
                    });
                }
                Err(e) => {
                    return Err(BaselineError::NotSavable {
                        reason: e.to_string(),
                    });
                }
            };
            let entry = StoredEntry::from_result(result, *allow_dirty, crate::result::unix_ms())?;
            store.save(&entry)?;
            println!(
                "saved the baseline of {} in {}",
                short(&entry.commit),
                store.describe()
            );
        }
    }
    Ok(())
}

fn entry_row(entry: &StoredEntry) -> Vec<String> {
    let result = entry.result.get().ok();
    vec![
        entry.fingerprint_key.clone(),
        entry.config_hash.chars().take(12).collect(),
        result.map_or_else(|| "?".to_owned(), |r| r.profile.clone()),
        match result {
            None => "?".to_owned(),
            Some(r) => r
                .ramp
                .as_ref()
                .and_then(|r| r.knee_rate_per_sec)
                .map_or_else(|| "none".to_owned(), |k| format!("{k:.1}")),
        },
        entry.saved_at_unix_ms.to_string(),
    ]
}

/// Runs `cargo loadgate compare BASE.json HEAD.json` and returns the exit code of the verdict.
pub fn compare_files(opts: &CompareOpts) -> i32 {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config = match crate::config::load(&opts.config.load_opts(cwd)) {
        Ok(config) => config,
        Err(e) => {
            eprint!("{}", render_error(&e));
            return ExitCode::USAGE;
        }
    };
    let (base, head) = match (read_result(&opts.base), read_result(&opts.head)) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(e), _) | (_, Err(e)) => {
            eprint!("{}", render_error(&e));
            return ExitCode::USAGE;
        }
    };
    let options = CompareOptions {
        gated_operations: config.gated_operations(),
        ..CompareOptions::default()
    };
    let (text, outcome) = render_comparison(
        (&opts.base, &base),
        (&opts.head, &head),
        &config.gate,
        &options,
    );
    print!("{text}");
    ExitCode::for_verdict(outcome, opts.fail_on_inconclusive, false)
}

/// What `compare` prints for the head result judged against the base result (each with the
/// path it was read from), and the verdict's outcome. The verdict is the `run` gate's
/// ([`compare_results`]), its leak finding included; `options` name the gated operations.
fn render_comparison(
    (base_path, base): (&Path, &RunResult),
    (head_path, head): (&Path, &RunResult),
    gate: &GateConfig,
    options: &CompareOptions,
) -> (String, VerdictOutcome) {
    let (comparison, verdict) = compare_results(base, head, gate, options);
    let about = vec![format!(
        "base: {} ({}), head: {} ({})",
        base_path.display(),
        comparison.base_commit.as_deref().map_or("no commit", short),
        head_path.display(),
        comparison.head_commit.as_deref().map_or("no commit", short),
    )];
    let mut out = render_verdict(&about, Some(&comparison), &verdict);
    out.push_str(&render_leak(Some(&verdict), None));
    (out, verdict.outcome)
}

pub(super) fn repo_root() -> Result<PathBuf, BaselineError> {
    let cwd = std::env::current_dir().map_err(|source| BaselineError::Io {
        action: "read",
        path: PathBuf::from("."),
        source,
    })?;
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .current_dir(&cwd)
        .output()
        .map_err(|source| BaselineError::Io {
            action: "run git in",
            path: cwd.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(BaselineError::UnknownRevision {
            rev: "HEAD".to_owned(),
            repo: cwd,
        });
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::result_from_str;
    use crate::stats::SlopeEstimate;

    const BEFORE: &str = include_str!("../../../tests/fixtures/report/before.json");
    const AFTER: &str = include_str!("../../../tests/fixtures/report/after.json");

    /// The defaults of `defaults.toml`: RSS may grow 2 MiB a minute.
    fn gate() -> GateConfig {
        GateConfig {
            p50_change: 0.05,
            p99_change: 0.10,
            capacity_loss: 0.10,
            error_rate_increase: 0.005,
            rss_slope_bytes_per_sec: 2.0 * 1024.0 * 1024.0 / 60.0,
            p50_floor: std::time::Duration::ZERO,
            p99_floor: std::time::Duration::ZERO,
            operations: Vec::new(),
        }
    }

    fn compared(head: &RunResult) -> String {
        let base = result_from_str(BEFORE).unwrap();
        let (text, _) = render_comparison(
            (Path::new("base.json"), &base),
            (Path::new("head.json"), head),
            &gate(),
            &CompareOptions::default(),
        );
        text
    }

    /// `compare` judged with `compare::compare` alone and never set `verdict.leak`, so a result
    /// whose soak leaked compared offline without a word of the leak that `run` reported.
    #[test]
    fn compare_of_a_leaking_result_reports_the_leak_as_run_does() {
        let mut head = result_from_str(AFTER).unwrap();
        let quiet = compared(&head);
        assert!(!quiet.contains("leak"), "{quiet}");
        let soak = head.soak.as_mut().expect("the fixture soaked");
        // 1 MiB/s, far beyond 2 MiB a minute.
        soak.slopes.rss_bytes_per_sec = Some(SlopeEstimate {
            estimate: 1_048_576.0,
            low: 900_000.0,
            high: 1_200_000.0,
        });
        let leaking = compared(&head);
        let (comparison, verdict) = compare_results(
            &result_from_str(BEFORE).unwrap(),
            &head,
            &gate(),
            &CompareOptions::default(),
        );
        let finding = verdict.leak.clone().expect("the verdict records the leak");
        assert_eq!(comparison.verdict.leak.as_ref(), Some(&finding));
        assert!(
            finding.message.starts_with("RSS grows 1.00 MiB/s"),
            "{finding:?}"
        );
        // Against a base that did not grow, head − base is beyond the threshold: it counts.
        assert!(finding.regression, "{finding:?}");
        assert_eq!(verdict.outcome, VerdictOutcome::Regression);
        let line = render_leak(Some(&verdict), None);
        assert!(line.starts_with("LEAK: RSS grows 1.00 MiB/s"), "{line}");
        assert!(leaking.ends_with(&line), "{leaking}");
    }
}
