//! The gate around a run: find the baseline of the commit the branch started from before the plan
//! runs (so the soak runs at the baseline's load point), compare and decide after it, and store the
//! run as a baseline when asked.

use crate::baseline::{
    BaselineError, DEFAULT_SEARCH_LIMIT, Fingerprint, History, Lookup, StoreSpec, StoredEntry,
    StoredResult, Wanted, lookup, short,
};
use crate::compare::{
    CompareOptions, DETECTION_POWER, NoiseRuns, Reachable, RunFigures, compare_results,
    format_change, format_threshold, head_leak, metric_name, noise_model, record_leak,
};
use crate::config::{GateConfig, LoadgateConfig};
use crate::report::table;
use crate::result::{BaselineRef, ConfigHashes, RunResult};
use crate::result::{Comparison, Metric, NoiseSource, Verdict, VerdictOutcome};
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

/// Looks for the baseline of `head` in the configured store: one with one of `config_hashes`, the
/// environment `fingerprint` and, when given, a phase that followed `schedule_hash`. A failing search is an error only
/// when a baseline is required; otherwise it becomes the explanation of a missing baseline.
pub fn find(
    repo: Option<&Path>,
    head: Option<&str>,
    options: &GateOptions,
    config_hashes: ConfigHashes,
    schedule_hash: Option<String>,
    fingerprint: Fingerprint,
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
        }) => Ok(Baseline::Found {
            reference: BaselineRef {
                commit,
                distance,
                store: store.describe(),
            },
            entry,
            history,
        }),
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
            explanations.extend(searched.iter().map(ToString::to_string));
            Ok(Baseline::Missing { explanations })
        }
        Err(e) if options.require_baseline => Err(e),
        Err(e) => Ok(Baseline::Missing {
            explanations: vec![format!("no baseline could be searched: {e}")],
        }),
    }
}

/// Compares the finished run with the baseline and returns the comparison (when there was one to
/// make) and the verdict; the p50 and p99 of `gated_operations` (the config's
/// [`crate::config::WorkloadConfig::gated_operations`]) are primary metrics.
pub fn decide_with(
    baseline: &Baseline,
    head: &RunResult,
    gate: &GateConfig,
    gated_operations: &[String],
) -> (Option<Comparison>, Verdict) {
    let leak = head_leak(head, gate);
    let leak = leak.as_deref();
    let (entry, history) = match baseline {
        Baseline::Found { entry, history, .. } => (entry, history),
        Baseline::Missing { explanations } => {
            let mut verdict = Verdict::no_baseline(explanations.clone());
            record_leak(leak, None, &mut verdict);
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
                ..CompareOptions::default()
            };
            let (comparison, verdict) = compare_results(base, head, gate, &options);
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
    }
    for warning in &verdict.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}

/// The number of primary metrics a run of `config` compares (Holm's family): p50 and p99 of all
/// operations, the error rate, the capacity when the profile has a ramp, and p50 and p99 of each
/// operation written with `gate = true` when there are two or more operations (with one, its
/// figures are the overall ones).
pub fn primary_family(config: &LoadgateConfig) -> usize {
    // The other operations' latencies are secondary (they warn).
    let workload = &config.workload;
    let gated = if workload.operations.len() >= 2 {
        workload.gated_operations().len()
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

    #[test]
    fn the_family_counts_the_latencies_of_each_gated_operation() {
        // p50, p99, the error rate and the capacity (the default profile ramps).
        assert_eq!(primary_family(&config(TWO, "default")), 4);
        let gated = config(&format!("{TWO}gate = true\n"), "default");
        assert_eq!(gated.workload.gated_operations(), ["buy"]);
        assert_eq!(primary_family(&gated), 6);
        // One operation: its latencies are the overall ones, counted once.
        let one =
            "[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }\ngate = true\n";
        assert_eq!(primary_family(&config(one, "default")), 4);
    }
}
