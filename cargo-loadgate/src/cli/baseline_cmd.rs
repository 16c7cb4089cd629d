//! `cargo loadgate baseline save|show|list` and `cargo loadgate compare BASE.json HEAD.json`: the
//! stores and the verdict without running anything.

use super::{
    BaselineCommand, BaselineOpts, CompareOpts, ExitCode,
    gate::render_verdict,
    render::{render_error, render_failure},
};
use crate::baseline::{BaselineError, StoreSpec, StoredEntry, StoredResult, resolve_commit, short};
use crate::compare::{RunFigures, compare};
use crate::report::table;
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
    let read = |path: &Path| {
        crate::result::read_result(path).map(|result| RunFigures::from_result(&result, None))
    };
    let (base, head) = match (read(&opts.base), read(&opts.head)) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(e), _) | (_, Err(e)) => {
            eprint!("{}", render_error(&e));
            return ExitCode::USAGE;
        }
    };
    let comparison = compare(&base, &head, &config.gate);
    let verdict = comparison.verdict.clone();
    let about = vec![format!(
        "base: {} ({}), head: {} ({})",
        opts.base.display(),
        comparison.base_commit.as_deref().map_or("no commit", short),
        opts.head.display(),
        comparison.head_commit.as_deref().map_or("no commit", short),
    )];
    print!("{}", render_verdict(&about, Some(&comparison), &verdict));
    ExitCode::for_verdict(verdict.outcome, opts.fail_on_inconclusive, false)
}

fn repo_root() -> Result<PathBuf, BaselineError> {
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
