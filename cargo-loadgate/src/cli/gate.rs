//! The gate around a run: find the baseline of the commit the branch started from before the plan
//! runs (so the soak runs at the baseline's load point), compare and decide after it, and store the
//! run as a baseline when asked.

use crate::baseline::{
    BaselineError, Candidate, CommitTrailers, DEFAULT_SEARCH_LIMIT, Fingerprint, History, Lookup,
    Mismatch, StoreSpec, StoredEntry, StoredResult, Wanted, head_trailers, lookup, short,
};
use crate::compare::{
    ACCEPT_TRAILER, Accept, CompareOptions, DETECTION_POWER, NoiseRuns, REASON_TRAILER, Reachable,
    RunFigures, accepted_phrase, compare_results, format_change, format_threshold, head_leak,
    metric_name, noise_model, parse_accept, record_leak,
};
use crate::config::{AcceptConfig, GateConfig, LoadgateConfig};
use crate::report::table;
use crate::result::{BaselineRef, ConfigHashes, RunResult};
use crate::result::{Comparison, Metric, MetricOutcome, NoiseSource, Verdict, VerdictOutcome};
use std::path::Path;

/// Where the gate's options come from (a part of `RunOpts`).
#[derive(Clone, Debug)]
pub struct GateOptions {
    /// `--baseline-store`: `notes`, `notes:REF` or `dir:PATH`.
    pub store: String,
    /// `--base-ref`: the branch the pull request targets.
    pub base_ref: Option<String>,
    /// `--allow-dirty`.
    pub allow_dirty: bool,
    /// `--require-baseline`.
    pub require_baseline: bool,
}

/// What the lookup found before the run.
pub enum Baseline {
    /// A stored result that matches this run's config and environment.
    Found {
        /// Where it is.
        reference: BaselineRef,
        /// What was stored.
        entry: Box<StoredEntry>,
        /// Older stored results of the same config and environment, for the noise figure.
        history: History,
        /// The intended changes of the head's commits (those not reachable from the baseline's
        /// commit), and the warnings about malformed ones.
        accepts: HeadAccepts,
    },
    /// None: each line says why a candidate was passed over, or why no search was possible.
    Missing {
        /// The explanations, for the verdict and for people.
        explanations: Vec<String>,
    },
}

impl Baseline {
    /// The knee of the baseline in sessions per second, where the head's soak should run.
    pub fn knee_sessions_per_sec(&self) -> Option<f64> {
        match self {
            Baseline::Found { entry, .. } => entry
                .result
                .get()
                .ok()
                .and_then(|r| r.ramp.as_ref())
                .and_then(|r| r.knee_sessions_per_sec),
            Baseline::Missing { .. } => None,
        }
    }
}

/// The intended changes that apply to a comparison: the well-formed `Loadgate-Accept` trailers
/// of the head's commits and the config's `[[accept]]` entries naming one of them, with a warning
/// for each trailer that was not accepted and why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeadAccepts {
    /// What is accepted, in the order the commits were made (newest first) and then the config's.
    pub accepts: Vec<Accept>,
    /// A trailer that does not parse, or has no reason, quoted; nothing of it is accepted.
    pub warnings: Vec<String>,
}

/// The [`HeadAccepts`] of the commits reachable from `head` and not from `base` (the commit whose
/// result the comparison uses) in `repo`, with the config's `entries`.
pub fn head_accepts(
    repo: &Path,
    base: &str,
    head: &str,
    entries: &[AcceptConfig],
) -> Result<HeadAccepts, BaselineError> {
    Ok(accepts_of(&head_trailers(repo, base, head)?, entries))
}

/// The [`HeadAccepts`] of `commits` (their trailers, in their order) with the config's
/// `entries` naming one of them: what a comparison over those commits accepts, and what
/// `history` marks as accepted steps.
pub fn accepts_of(commits: &[CommitTrailers], entries: &[AcceptConfig]) -> HeadAccepts {
    let mut found = HeadAccepts::default();
    for c in commits {
        let at = short(&c.commit);
        for value in &c.accepts {
            let quoted = format!("{ACCEPT_TRAILER}: {value}");
            let reason = c.reasons.join("; ");
            match parse_accept(value) {
                Ok(_) if reason.is_empty() => found.warnings.push(format!(
                    "trailer `{quoted}` in {at} has no `{REASON_TRAILER}:` line; nothing from \
                     it is accepted"
                )),
                Ok((scope, amount)) => found.accepts.push(Accept {
                    scope,
                    amount,
                    source: format!("`{quoted}` in {at}"),
                    reason,
                }),
                Err(why) => found.warnings.push(format!(
                    "malformed trailer `{quoted}` in {at}: {why}; nothing from it is accepted"
                )),
            }
        }
    }
    for entry in entries {
        // Only while one of its commits is the head's: an entry never outlives them.
        let named = commits.iter().find(|c| {
            entry
                .commits
                .iter()
                .any(|id| c.commit.starts_with(id.as_str()))
        });
        if let Some(c) = named {
            found.accepts.push(Accept {
                scope: entry.scope.clone(),
                amount: entry.amount,
                source: format!(
                    "`[[accept]]` at {} for {}",
                    entry.location,
                    short(&c.commit)
                ),
                reason: entry.reason.clone(),
            });
        }
    }
    found
}

/// [`find`] for a measured `result` of `config` in the repository at `git_dir`: its commit, its
/// environment's fingerprint and the config's comparable schedule, as `run` and `merge` both ask.
pub fn find_for_result(
    result: &RunResult,
    git_dir: &Path,
    options: &GateOptions,
    config: &LoadgateConfig,
    config_hashes: ConfigHashes,
) -> Result<Baseline, BaselineError> {
    let repo = result.git.as_ref().map(|_| git_dir);
    let head = result.git.as_ref().map(|g| g.commit.as_str());
    // The data tier is part of it: stored baselines carry theirs (`Fingerprint::of_result`).
    let fp = crate::baseline::Fingerprint {
        data_tier: result.data.as_ref().and_then(|d| d.tier.clone()),
        ..crate::baseline::fingerprint(
            &result.environment,
            result.target.as_ref(),
            env!("CARGO_PKG_VERSION"),
        )
    };
    find(
        repo,
        head,
        options,
        config_hashes,
        crate::plan::comparable_schedule_hash(config),
        fp,
        &config.accept,
    )
}

/// Looks for the baseline of `head` in the configured store: one with one of `config_hashes`, the
/// environment `fingerprint` and, when given, a phase that followed `schedule_hash`. A failing search is an error only
/// when a baseline is required; otherwise it becomes the explanation of a missing baseline.
/// `accept` are the config's `[[accept]]` entries: with the head's `Loadgate-Accept` trailers
/// they make the accepts of the comparison, and the commits they name stop the noise history.
pub fn find(
    repo: Option<&Path>,
    head: Option<&str>,
    options: &GateOptions,
    config_hashes: ConfigHashes,
    schedule_hash: Option<String>,
    fingerprint: Fingerprint,
    accept: &[AcceptConfig],
) -> Result<Baseline, BaselineError> {
    let (Some(repo), Some(head)) = (repo, head) else {
        return Ok(Baseline::Missing {
            explanations: vec!["the package is not in a git repository with a commit".to_owned()],
        });
    };
    let spec = StoreSpec::parse(&options.store)?;
    let store = spec.open(repo);
    let wanted = Wanted {
        config_hashes,
        fingerprint,
        // The first ramp step's (`plan::comparable_schedule_hash`): fixed by the config before
        // anything runs, unlike the soak's, whose rate follows the baseline's knee.
        schedule_hash,
        accepted_commits: accept.iter().flat_map(|a| a.commits.clone()).collect(),
    };
    let found = lookup(
        repo,
        head,
        options.base_ref.as_deref(),
        DEFAULT_SEARCH_LIMIT,
        store.as_ref(),
        &wanted,
    );
    match found {
        Ok(Lookup::Found {
            commit,
            distance,
            entry,
            history,
            ..
        }) => {
            // A head whose trailers cannot be read accepts nothing, and says so.
            let accepts = head_accepts(repo, &commit, head, accept).unwrap_or_else(|e| HeadAccepts {
                accepts: Vec::new(),
                warnings: vec![format!(
                    "the head's commits could not be read for `{ACCEPT_TRAILER}` trailers: {e}; \
                     nothing is accepted"
                )],
            });
            Ok(Baseline::Found {
                reference: BaselineRef {
                    commit,
                    distance,
                    store: store.describe(),
                },
                entry,
                history,
                accepts,
            })
        }
        Ok(Lookup::NotFound {
            merge_base,
            searched,
        }) => {
            let mut explanations = vec![format!(
                "searched {} commit(s) from the merge-base {} in {}",
                searched.len(),
                short(&merge_base),
                store.describe()
            )];
            explanations.extend(passed_over(&searched));
            Ok(Baseline::Missing { explanations })
        }
        Err(e) if options.require_baseline => Err(e),
        Err(e) => Ok(Baseline::Missing {
            explanations: vec![format!("no baseline could be searched: {e}")],
        }),
    }
}

/// Why each searched commit was passed over, closest first: a line for each commit whose stored
/// results did not match (it says what differed), then one line for all the commits with nothing
/// stored. A gate's first runs on a branch search every commit up to the limit (50), and fifty
/// lines of "no baseline stored" would bury the few that say something.
fn passed_over(searched: &[Candidate]) -> Vec<String> {
    let (empty, stored): (Vec<&Candidate>, Vec<&Candidate>) = searched
        .iter()
        .partition(|c| c.mismatch == Mismatch::NoBaseline);
    let mut lines: Vec<String> = stored.iter().map(ToString::to_string).collect();
    let commits = |c: &[&Candidate]| match c {
        [first, second, .., last] if c.len() > 4 => format!(
            "{}, {}, … {} ({} commits)",
            short(&first.commit),
            short(&second.commit),
            short(&last.commit),
            c.len()
        ),
        _ => c
            .iter()
            .map(|c| short(&c.commit))
            .collect::<Vec<_>>()
            .join(", "),
    };
    match empty.as_slice() {
        [] => {}
        [one] => lines.push(one.to_string()),
        all if all.len() == searched.len() => lines.push(format!(
            "no baseline stored for any of them: {}",
            commits(all)
        )),
        some => lines.push(format!(
            "no baseline stored for the other {}: {}",
            some.len(),
            commits(some)
        )),
    }
    lines
}

/// Compares the finished run with the baseline and returns the comparison (when there was one to
/// make) and the verdict: the metrics, the leak and the absolute checks
/// ([`crate::compare::settle_checks`], also without a baseline). The p50 and p99 of
/// `gated_operations` (the config's [`crate::config::WorkloadConfig::gated_operations`]) are
/// primary metrics.
pub fn decide_with(
    baseline: &Baseline,
    head: &RunResult,
    gate: &GateConfig,
    gated_operations: &[String],
) -> (Option<Comparison>, Verdict) {
    let leak = head_leak(head, gate);
    let leak = leak.as_deref();
    let (entry, history, accepts) = match baseline {
        Baseline::Found {
            entry,
            history,
            accepts,
            ..
        } => (entry, history, accepts),
        Baseline::Missing { explanations } => {
            let mut verdict = Verdict::no_baseline(explanations.clone());
            record_leak(leak, None, &mut verdict);
            crate::compare::settle_checks(head, None, &mut verdict);
            return (None, verdict);
        }
    };
    // The lookup only finds entries it could read; this is for a baseline found some other way.
    match entry
        .result
        .get()
        .map_err(|e| format!("the baseline's figures cannot be read: {e}"))
    {
        Ok(base) => {
            let options = CompareOptions {
                noise: Some(noise_model(
                    &noise_runs(RunFigures::from_result(base, None), entry, history),
                    &CompareOptions::default(),
                )),
                gated_operations: gated_operations.to_vec(),
                accepts: accepts.accepts.clone(),
                ..CompareOptions::default()
            };
            let (mut comparison, mut verdict) = compare_results(base, head, gate, &options);
            // What the comparison could not see: malformed trailers, and where the history
            // stopped at an accepted change (issue 12).
            let more: Vec<String> = accepts
                .warnings
                .iter()
                .cloned()
                .chain(history.accepted_step.as_ref().map(|s| s.describe()))
                .collect();
            comparison.verdict.warnings.extend(more.iter().cloned());
            verdict.warnings.extend(more);
            (Some(comparison), verdict)
        }
        Err(reason) => {
            let mut verdict = Verdict {
                outcome: VerdictOutcome::Inconclusive,
                rule_fired: reason,
                metrics: Vec::new(),
                warnings: Vec::new(),
                leak: None,
            };
            record_leak(leak, None, &mut verdict);
            crate::compare::settle_checks(head, None, &mut verdict);
            (None, verdict)
        }
    }
}

/// The stored runs the comparison's noise figure rests on: the baseline first, then the older
/// history, and the noise runs kept with the baseline (`qualify --save`). A stored run this
/// version cannot read is left out.
fn noise_runs(base: RunFigures, entry: &StoredEntry, history: &History) -> NoiseRuns {
    let figures = |r: &StoredResult| r.get().ok().map(|r| RunFigures::from_result(r, None));
    let mut runs = vec![base];
    runs.extend(history.entries.iter().filter_map(|e| figures(&e.result)));
    NoiseRuns {
        history: runs,
        qualify: entry.noise_runs.iter().filter_map(figures).collect(),
        skipped: history.skipped.clone(),
    }
}

/// Stores `result` as the baseline of its commit.
pub fn save(
    repo: &Path,
    options: &GateOptions,
    result: &RunResult,
) -> Result<String, BaselineError> {
    let entry = StoredEntry::from_result(
        StoredResult::new(result),
        options.allow_dirty,
        crate::result::unix_ms(),
    )?;
    let store = StoreSpec::parse(&options.store)?.open(repo);
    store.save(&entry)?;
    Ok(format!("{} for {}", store.describe(), short(&entry.commit)))
}

/// The line that states a leak finding as the verdict decided it (`LEAK: …` when it counts,
/// `leak, not counted: … (why)` when not), empty without one. `soak_leak` is the soak's own
/// finding, for results written before the verdict recorded it.
pub fn render_leak(verdict: Option<&Verdict>, soak_leak: Option<&str>) -> String {
    match crate::result::leak_statement(verdict, soak_leak) {
        Some((true, leak)) => format!("LEAK: {leak}\n"),
        Some((false, leak)) => format!("leak, not counted: {leak}\n"),
        None => String::new(),
    }
}

/// What to say under the verdict about the baseline: which one was used, or why there was none.
pub fn baseline_lines(baseline: &Baseline) -> Vec<String> {
    match baseline {
        Baseline::Found { reference, .. } => vec![format!(
            "baseline: {} ({} first-parent step(s) from the merge-base, {})",
            short(&reference.commit),
            reference.distance,
            reference.store
        )],
        Baseline::Missing { explanations } => {
            explanations.iter().map(|l| format!("  {l}")).collect()
        }
    }
}

/// The verdict's word as the terminal's verdict line writes it: `PASS`, `NO BASELINE`.
pub fn verdict_word(outcome: VerdictOutcome) -> String {
    outcome.word().to_uppercase()
}

/// The verdict for people: the decision first, the rule that fired, what it was compared with,
/// then a table of the checks.
pub fn render_verdict(
    about: &[String],
    comparison: Option<&Comparison>,
    verdict: &Verdict,
) -> String {
    let mut out = String::new();
    let word = verdict_word(verdict.outcome);
    out.push_str(&format!("\nverdict: {word}: {}\n", verdict.rule_fired));
    for line in about {
        out.push_str(line);
        out.push('\n');
    }
    if let Some(noise) = comparison.and_then(|c| c.noise.as_ref()) {
        out.push_str(&noise.describe());
        out.push('\n');
    }
    if let Some(comparison) = comparison {
        let rows: Vec<Vec<String>> = comparison
            .metrics
            .iter()
            .map(|m| {
                vec![
                    metric_name(m),
                    format_change(m, m.estimate),
                    format!("{} … {}", format_change(m, m.low), format_change(m, m.high)),
                    format_threshold(m),
                    m.outcome.word().to_owned(),
                ]
            })
            .collect();
        out.push_str(&table(
            &["check", "change", "interval", "threshold", "outcome"],
            &rows,
        ));
        for m in comparison
            .metrics
            .iter()
            .filter(|m| m.outcome == MetricOutcome::Accepted)
        {
            if let Some(a) = &m.accepted {
                out.push_str(&format!(
                    "accepted: {}: {}{}\n",
                    accepted_phrase(m),
                    a.sources.join("; "),
                    if a.reasons.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", a.reasons.join("; "))
                    }
                ));
            }
        }
    }
    if let Some(h) = comparison.and_then(|c| c.headroom.as_ref()) {
        out.push_str(&crate::report::headroom_comparison_line(h));
        out.push('\n');
    }
    for warning in &verdict.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}

/// The number of primary metrics a run of `config` compares (Holm's family): p50 and p99 of all
/// operations, the error rate, the capacity when the profile has a ramp, and p50 and p99 of each
/// operation written with `gate = true` or named by `[gate] operations` when there are two or
/// more operations (with one, its
/// figures are the overall ones).
pub fn primary_family(config: &LoadgateConfig) -> usize {
    // The other operations' latencies are secondary (they warn).
    let workload = &config.workload;
    let gated = if workload.operations.len() >= 2 {
        config.gated_operations().len()
    } else {
        0
    };
    3 + usize::from(!config.ramp.steps.is_empty()) + 2 * gated
}

/// The thresholds a profile can reach on this machine, for people (`check`, `qualify`): per
/// primary metric the configured threshold, the smallest change a stored comparison can decide,
/// and the noise figure it rests on.
pub fn render_reachable(reachable: &[Reachable], alpha: f64, family: usize) -> String {
    let change = |r: &Reachable, v: f64| match r.metric {
        Metric::ErrorRate => format!("+{:.2} pp", v * 100.0),
        Metric::Capacity => format!("-{:.1}%", v * 100.0),
        _ => format!("+{:.1}%", v * 100.0),
    };
    let rows: Vec<Vec<String>> = reachable
        .iter()
        .map(|r| {
            let n = &r.noise;
            let source = match n.source {
                NoiseSource::Default => n.source.word().to_owned(),
                s => format!("{} ({} runs)", s.word(), n.runs),
            };
            vec![
                r.metric.label().to_owned(),
                change(r, r.threshold),
                format!(
                    "{}{}",
                    change(r, r.change),
                    if r.with_within { "" } else { " or more" }
                ),
                format!(
                    "{} ({}{})",
                    if r.pass_threshold < r.threshold {
                        "yes"
                    } else {
                        "no"
                    },
                    change(r, r.pass_threshold),
                    if r.with_within { "" } else { " or more" }
                ),
                format!("±{:.1}%", n.run_sd * 100.0).replace(
                    '%',
                    if r.metric == Metric::ErrorRate {
                        " pp"
                    } else {
                        "%"
                    },
                ),
                source,
            ]
        })
        .collect();
    let mut out = format!(
        "Thresholds a stored comparison can decide on this machine: the smallest change found \
         with {:.0}% power at α = {alpha} over {family} primary metrics, and whether unchanged code \
         can pass the configured threshold (the smallest one it passes, with its interval at α):\n",
        DETECTION_POWER * 100.0
    );
    out.push_str(&table(
        &[
            "check",
            "threshold",
            "smallest detectable",
            "unchanged code passes (from)",
            "run-to-run SD",
            "noise from",
        ],
        &rows,
    ));
    if reachable.iter().any(|r| !r.with_within) {
        out.push_str(
            "\"or more\": a run's own sampling error is not known yet and adds to it; a longer \
             soak shrinks that part (docs/statistics.md)\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_config_str;
    use std::path::Path;

    fn config(operations: &str, profile: &str) -> LoadgateConfig {
        let text = format!("[workload]\nsessions-per-sec = 10\n{operations}");
        parse_config_str(&text, Path::new("loadgate.toml"), None, profile).expect("config")
    }

    const TWO: &str = "[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }\n\
        next = [{ to = \"buy\", p = 0.5 }]\n\
        [[workload.operation]]\nname = \"buy\"\nrequest = { path = \"/buy\" }\n";

    /// The head's accepts: well-formed trailers with a reason; a malformed trailer, or one
    /// without a reason, is a warning quoting it and accepts nothing; an `[[accept]]` entry
    /// applies only while a commit it names is the head's.
    #[test]
    fn the_heads_accepts_come_from_its_trailers_and_the_entries_naming_its_commits() {
        use crate::baseline::git_testing::{commit, git, init};
        use crate::compare::AcceptScope;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let base = init(p);
        git(p, &["checkout", "-q", "-b", "feature"]);
        let good = commit(
            p,
            "slower login\n\nLoadgate-Accept: p50 of login +20%\n\
             Loadgate-Accept: p99 15%\nLoadgate-Reason: bcrypt cost 12",
        );
        let bare = commit(p, "tune\n\nLoadgate-Accept: capacity -10%");
        let entry = |id: &str| AcceptConfig {
            commits: vec![id.to_owned()],
            scope: AcceptScope::All,
            amount: 0.0,
            reason: "a rewrite".to_owned(),
            location: "loadgate.toml:3:1".to_owned(),
        };
        let entries = [entry(&good[..7]), entry("0000000")];
        let found = head_accepts(p, &base, "HEAD", &entries).unwrap();
        let (g, b) = (short(&good), short(&bare));
        assert_eq!(
            found.warnings,
            [
                format!(
                    "trailer `Loadgate-Accept: capacity -10%` in {b} has no `Loadgate-Reason:` \
                     line; nothing from it is accepted"
                ),
                format!(
                    "malformed trailer `Loadgate-Accept: p99 15%` in {g}: the change `15%` has \
                     no sign; write e.g. `+15%`; nothing from it is accepted"
                ),
            ]
        );
        let sources: Vec<&str> = found.accepts.iter().map(|a| a.source.as_str()).collect();
        assert_eq!(
            sources,
            [
                format!("`Loadgate-Accept: p50 of login +20%` in {g}"),
                format!("`[[accept]]` at loadgate.toml:3:1 for {g}"),
            ]
        );
        assert_eq!(found.accepts[0].reason, "bcrypt cost 12");
        // Against a base that already holds those commits, nothing applies.
        let later = head_accepts(p, &bare, "HEAD", &entries).unwrap();
        assert_eq!(later, HeadAccepts::default());
    }

    #[test]
    fn commits_with_nothing_stored_are_explained_in_one_line() {
        let candidate = |n: usize, mismatch: Mismatch| Candidate {
            commit: format!("{n:07x}{}", "0".repeat(33)),
            distance: n,
            mismatch,
        };
        let empty: Vec<Candidate> = (1..=50)
            .map(|n| candidate(n, Mismatch::NoBaseline))
            .collect();
        assert_eq!(
            passed_over(&empty),
            ["no baseline stored for any of them: 0000001, 0000002, … 0000032 (50 commits)"]
        );
        assert_eq!(passed_over(&empty[..1]), ["no baseline stored for 0000001"]);
        assert_eq!(
            passed_over(&empty[..3]),
            ["no baseline stored for any of them: 0000001, 0000002, 0000003"]
        );
        // What differed is said commit by commit; the empty ones follow in one line.
        let mixed = vec![
            candidate(1, Mismatch::NoBaseline),
            candidate(2, Mismatch::DifferentSchedule),
            candidate(3, Mismatch::NoBaseline),
        ];
        assert_eq!(
            passed_over(&mixed),
            [
                "baseline at 0000002 followed a different schedule with the same configuration",
                "no baseline stored for the other 2: 0000001, 0000003",
            ]
        );
        // Four are listed whole, five are shortened; one empty commit among mismatches is its
        // own line as before.
        assert_eq!(
            passed_over(&empty[..4]),
            ["no baseline stored for any of them: 0000001, 0000002, 0000003, 0000004"]
        );
        assert_eq!(
            passed_over(&empty[..5]),
            ["no baseline stored for any of them: 0000001, 0000002, … 0000005 (5 commits)"]
        );
        assert_eq!(
            passed_over(&mixed[..2]),
            [
                "baseline at 0000002 followed a different schedule with the same configuration",
                "no baseline stored for 0000001",
            ]
        );
        assert!(passed_over(&[]).is_empty());
    }

    #[test]
    fn the_family_counts_the_latencies_of_each_gated_operation() {
        // p50, p99, the error rate and the capacity (the default profile ramps).
        assert_eq!(primary_family(&config(TWO, "default")), 4);
        let gated = config(&format!("{TWO}gate = true\n"), "default");
        assert_eq!(gated.gated_operations(), ["buy"]);
        assert_eq!(primary_family(&gated), 6);
        // One operation: its latencies are the overall ones, counted once.
        let one =
            "[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }\ngate = true\n";
        assert_eq!(primary_family(&config(one, "default")), 4);
    }
}
