//! `cargo loadgate qualify`: what the gate can see on this machine (STATISTICS.md §10).
//!
//! One run is stored as the baseline of HEAD in a private directory store; then `--runs` A/A runs
//! (nothing changed) are compared with it, then `--runs` runs with the injected regression (an
//! environment knob of the service). Every run is this binary's own `run`, as a child process, so
//! each one boots, measures, decides and cleans up exactly as in CI. The report is the
//! false-regression rate (A/A runs that said regression) and the detection rate (injected runs that
//! said regression), each with a 95% Wilson interval, the pass rate of the A/A runs, the capacity
//! regressions among both series, and how many runs were inconclusive or invalid.
//! It then states the thresholds a stored comparison can decide with the run-to-run noise the A/A
//! runs measured, and with `--save` stores the baseline run as HEAD's baseline with the A/A runs
//! kept beside it as noise samples (`StoredEntry::noise_runs`), which later comparisons use.
//!
//! With `--paired` (issue 13) there is no baseline run: every A/A run is `run --mode paired
//! --base-same-as-head`, the head's build booted twice and measured in alternating blocks, and
//! every injected run the same with the knob on the head alone (`--head-env`). Beside the rates it
//! reports the median over the A/A runs of the smallest change each run could detect in p50 and
//! p99 (all operations), and whether the issue's goals were met.
//!
//! A series of paired runs takes hours (about five minutes a run), so it can be made in pieces:
//! every finished run is kept as `qualify-run.json` in its own directory, the settings of the
//! series as `qualify-series.json`, and `--resume` reads back the runs an earlier invocation with
//! the same settings, commit and `--out-dir` finished instead of making them again. `--aa-runs`
//! sets the A/A series apart from the injected one, so a second knob's series need not repeat
//! the A/A runs.

use super::gate::{primary_family, render_reachable};
use super::{ExitCode, QualifyOpts, render::render_error};
use crate::baseline::{BaselineError, StoreSpec, StoredEntry, StoredResult, short};
use crate::compare::{
    CALIBRATION_TOLERANCE, CompareOptions, DEFAULT_ALPHA, NoiseRuns, RunFigures, noise_model,
};
use crate::config::{LoadgateConfig, TargetSource};
use crate::result::{
    MeasurementMode, Metric, MetricComparison, MetricOutcome, ReadError, RunResult,
    SkippedAncestors, unix_ms,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

/// The confidence of the reported rate intervals.
pub const CONFIDENCE: f64 = 0.95;
/// Baseline runs made at most, while the machine drifts during them.
pub const BASELINE_ATTEMPTS: u32 = 3;
/// Issue 13's goal for paired mode: at least this share of the A/A runs pass (18 of 20).
pub const GOAL_AA_PASS_RATE: f64 = 0.9;
/// Issue 13's goal for paired mode: the median smallest detectable p50 change, at most.
pub const GOAL_DETECTABLE_P50: f64 = 0.10;
/// Issue 13's goal for paired mode: the median smallest detectable p99 change, at most.
pub const GOAL_DETECTABLE_P99: f64 = 0.20;

/// The file in a run's directory that keeps how it ended, for `--resume`.
pub const RUN_FILE: &str = "qualify-run.json";
/// The file in the out dir that keeps the settings the series was made with, for `--resume`.
pub const SERIES_FILE: &str = "qualify-series.json";

/// What kind of run a qualification run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// The run stored as the baseline.
    Baseline,
    /// Nothing changed: any regression is a false one.
    AA,
    /// The injected regression: a regression is a detection.
    Injected,
}

/// How one run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QualifyRun {
    /// Which series it belongs to.
    pub kind: RunKind,
    /// 1-based within its series.
    pub index: u32,
    /// The child's exit code (`None` when it was killed by a signal).
    pub exit_code: Option<i32>,
    /// The verdict's outcome from its result (`pass`, `regression`, `inconclusive`,
    /// `no-baseline`), or `None` when it reached no verdict.
    pub outcome: Option<String>,
    /// Why the run's result could not be read, naming its path and the read error: an error of
    /// the run, not a run without a verdict. `None` when it was read, or when the run wrote
    /// none (it failed before the end; its exit code tells).
    pub unreadable: Option<String>,
    /// The rule that fired, for people.
    pub rule_fired: Option<String>,
    /// The metrics that regressed, e.g. `p99 transfer`.
    pub regressed: Vec<String>,
    /// Whether every phase kept its schedule.
    pub valid: Option<bool>,
    /// How far the run's calibration moved between before and after its phases.
    pub calibration_drift: Option<f64>,
    /// The outcome of the capacity comparison (all operations together), when the run compared
    /// capacity.
    pub capacity: Option<MetricOutcome>,
    /// The smallest p50 increase (all operations together) the run would call a regression, as a
    /// ratio less one (0.08 = 8%), when its comparison reported one.
    pub detectable_p50: Option<f64>,
    /// The same for p99.
    pub detectable_p99: Option<f64>,
    /// The run's result file.
    pub result: PathBuf,
    /// How long the run took, in seconds.
    pub seconds: f64,
    /// The earlier series' directory this run was pooled from (`--pool`); absent for the runs of
    /// this invocation and for those `--resume` read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled_from: Option<PathBuf>,
}

impl QualifyRun {
    /// Whether the run ended in an error rather than a measurement: it could not start or boot its
    /// target, failed otherwise, was killed, or left a result that cannot be read. `--resume`
    /// makes such a run again rather than reading it back. A run whose gate reached no verdict
    /// (an invalid run, exit 21) is a measurement, and is kept.
    pub fn ended_in_error(&self) -> bool {
        self.outcome.is_none()
            && (self.unreadable.is_some()
                || matches!(
                    self.exit_code,
                    None | Some(ExitCode::OTHER_ERROR) | Some(ExitCode::TARGET_FAILED)
                ))
    }
}

/// A proportion with its Wilson interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// Runs that counted.
    pub hits: u32,
    /// Runs that reached a verdict.
    pub of: u32,
    /// `hits / of`.
    pub estimate: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

impl Rate {
    /// The Wilson score interval at [`CONFIDENCE`] of `hits` out of `of`.
    pub fn wilson(hits: u32, of: u32) -> Self {
        if of == 0 {
            return Self {
                hits,
                of,
                estimate: 0.0,
                low: 0.0,
                high: 1.0,
            };
        }
        let n = f64::from(of);
        let p = f64::from(hits) / n;
        let z = crate::stats::normal_quantile(1.0 - (1.0 - CONFIDENCE) / 2.0);
        let z2 = z * z;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
        Self {
            hits,
            of,
            estimate: p,
            low: (centre - half).max(0.0),
            high: (centre + half).min(1.0),
        }
    }

    fn describe(&self) -> String {
        format!(
            "{}/{} = {:.0}% (95% interval {:.0}%–{:.0}%)",
            self.hits,
            self.of,
            self.estimate * 100.0,
            self.low * 100.0,
            self.high * 100.0
        )
    }
}

/// Counts of one series.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Verdict pass.
    pub pass: u32,
    /// Verdict regression.
    pub regression: u32,
    /// Verdict inconclusive.
    pub inconclusive: u32,
    /// No verdict: the run was invalid, failed, or found no baseline.
    pub no_verdict: u32,
    /// The run wrote a result that could not be read.
    pub unreadable: u32,
}

impl Tally {
    fn of(runs: &[QualifyRun], kind: RunKind) -> Self {
        let mut t = Self::default();
        for run in runs.iter().filter(|r| r.kind == kind) {
            if run.unreadable.is_some() {
                t.unreadable += 1;
                continue;
            }
            match run.outcome.as_deref() {
                Some("pass") => t.pass += 1,
                Some("regression") => t.regression += 1,
                Some("inconclusive") => t.inconclusive += 1,
                _ => t.no_verdict += 1,
            }
        }
        t
    }

    /// Runs that reached a verdict (pass, regression or inconclusive).
    fn decided(&self) -> u32 {
        self.pass + self.regression + self.inconclusive
    }

    /// Every run of the series, whatever its end.
    fn total(&self) -> u32 {
        self.decided() + self.no_verdict + self.unreadable
    }
}

/// Capacity regressions: false ones among the A/A runs, detections among the injected ones.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CapacityRates {
    /// Capacity regressions among the A/A runs that compared capacity.
    pub false_regression_rate: Rate,
    /// Capacity regressions among the injected runs that compared capacity; absent without
    /// `--inject`.
    pub detection_rate: Option<Rate>,
}

impl CapacityRates {
    /// `None` when no run compared capacity (no ramp, or no run got that far).
    fn of(runs: &[QualifyRun], injected: bool) -> Option<Self> {
        let rate = |kind| {
            let judged = runs
                .iter()
                .filter(|r| r.kind == kind)
                .filter_map(|r| r.capacity);
            let (mut hits, mut of) = (0, 0);
            for outcome in judged {
                of += 1;
                hits += u32::from(outcome == MetricOutcome::Regression);
            }
            Rate::wilson(hits, of)
        };
        let rates = Self {
            false_regression_rate: rate(RunKind::AA),
            detection_rate: injected.then(|| rate(RunKind::Injected)),
        };
        let judged = rates.false_regression_rate.of + rates.detection_rate.map_or(0, |r| r.of);
        (judged > 0).then_some(rates)
    }
}

/// The median over the A/A runs of one metric's smallest detectable change.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DetectableMedian {
    /// The median, as a ratio less one (0.08 = 8%); `None` when no A/A run reported one.
    pub median: Option<f64>,
    /// The A/A runs that reported one.
    pub of: u32,
}

impl DetectableMedian {
    fn of(runs: &[QualifyRun], detectable: impl Fn(&QualifyRun) -> Option<f64>) -> Self {
        let values: Vec<f64> = runs
            .iter()
            .filter(|r| r.kind == RunKind::AA)
            .filter_map(detectable)
            .filter(|d| d.is_finite())
            .collect();
        Self {
            median: crate::stats::median(&values),
            of: u32::try_from(values.len()).unwrap_or(u32::MAX),
        }
    }

    fn within(&self, goal: f64) -> bool {
        self.median.is_some_and(|m| m <= goal)
    }

    fn describe(&self, goal: f64) -> String {
        match self.median {
            Some(m) => format!(
                "{:.1}% (goal at most {:.0}%: {})",
                m * 100.0,
                goal * 100.0,
                met(self.within(goal))
            ),
            None => format!("not reported (goal at most {:.0}%: missed)", goal * 100.0),
        }
    }
}

/// What paired A/A runs could detect: the medians of their smallest detectable changes in p50
/// and p99 of all operations together.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Detectable {
    /// p50 of all operations together.
    pub p50: DetectableMedian,
    /// p99 of all operations together.
    pub p99: DetectableMedian,
}

/// Whether the paired runs met issue 13's goals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PairedGoals {
    /// No A/A run said regression ("0 regressions in 20").
    pub no_false_regression: bool,
    /// At least [`GOAL_AA_PASS_RATE`] of the A/A runs passed ("at least 18 of 20 pass").
    pub aa_pass_rate: bool,
    /// The median detectable p50 change is at most [`GOAL_DETECTABLE_P50`].
    pub detectable_p50: bool,
    /// The median detectable p99 change is at most [`GOAL_DETECTABLE_P99`].
    pub detectable_p99: bool,
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "missed" }
}

/// The version of `qualify.json`'s format (docs/schema/qualify-v1.json).
pub const QUALIFY_FORMAT_VERSION: u32 = 1;

/// The qualification report (`--json`), as docs/schema/qualify-v1.json describes it.
#[derive(Clone, Debug, Serialize)]
pub struct QualifyReport {
    /// [`QUALIFY_FORMAT_VERSION`].
    pub format_version: u32,
    /// How the runs compared: `stored` (against a baseline run) or `paired` (`--paired`).
    pub mode: MeasurementMode,
    /// The injected environment, KEY=VALUE (in paired mode, the head's only).
    pub inject: Vec<String>,
    /// A/A outcomes.
    pub aa: Tally,
    /// Injected-regression outcomes.
    pub injected: Tally,
    /// Regressions among A/A runs that reached a verdict.
    pub false_regression_rate: Rate,
    /// Regressions among injected runs that reached a verdict; absent without `--inject`.
    pub detection_rate: Option<Rate>,
    /// Passes among all A/A runs made (a run without a verdict is not a pass).
    pub aa_pass_rate: Rate,
    /// Capacity regressions in both series; absent when no run compared capacity.
    pub capacity: Option<CapacityRates>,
    /// The median smallest detectable changes of the A/A runs; in paired mode only.
    pub detectable: Option<Detectable>,
    /// Whether issue 13's goals were met; in paired mode only.
    pub goals: Option<PairedGoals>,
    /// The earlier series pooled into this report (`--pool`), whose runs come first in `runs`.
    pub pools: Vec<Pool>,
    /// Every run, in order.
    pub runs: Vec<QualifyRun>,
}

impl QualifyReport {
    fn new(mode: MeasurementMode, inject: &[(String, String)], runs: Vec<QualifyRun>) -> Self {
        let aa = Tally::of(&runs, RunKind::AA);
        let injected = Tally::of(&runs, RunKind::Injected);
        let false_regression_rate = Rate::wilson(aa.regression, aa.decided());
        let aa_pass_rate = Rate::wilson(aa.pass, aa.total());
        let detectable = (mode == MeasurementMode::Paired).then(|| Detectable {
            p50: DetectableMedian::of(&runs, |r| r.detectable_p50),
            p99: DetectableMedian::of(&runs, |r| r.detectable_p99),
        });
        let goals = detectable.map(|d| PairedGoals {
            no_false_regression: aa.regression == 0,
            aa_pass_rate: aa.total() > 0 && aa_pass_rate.estimate >= GOAL_AA_PASS_RATE,
            detectable_p50: d.p50.within(GOAL_DETECTABLE_P50),
            detectable_p99: d.p99.within(GOAL_DETECTABLE_P99),
        });
        Self {
            format_version: QUALIFY_FORMAT_VERSION,
            mode,
            inject: inject.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            false_regression_rate,
            detection_rate: (!inject.is_empty())
                .then(|| Rate::wilson(injected.regression, injected.decided())),
            aa_pass_rate,
            capacity: CapacityRates::of(&runs, !inject.is_empty()),
            detectable,
            goals,
            aa,
            injected,
            pools: Vec::new(),
            runs,
        }
    }

    /// The report for people.
    pub fn render(&self) -> String {
        let tally = |t: &Tally| {
            let unreadable = match t.unreadable {
                0 => String::new(),
                n => format!(", {n} with an unreadable result"),
            };
            format!(
                "{} pass, {} regression, {} inconclusive, {} without a verdict{unreadable}",
                t.pass, t.regression, t.inconclusive, t.no_verdict
            )
        };
        let goal = |g: Option<bool>, what: &str| {
            g.map_or_else(String::new, |g| format!("; goal {what}: {}", met(g)))
        };
        let knob = match self.mode {
            MeasurementMode::Paired => format!("{} on the head", self.inject.join(" ")),
            MeasurementMode::Stored => self.inject.join(" "),
        };
        let mut out = String::new();
        if self.mode == MeasurementMode::Paired {
            out.push_str("paired runs: the head's build booted twice (--base-same-as-head)\n");
        }
        for pool in &self.pools {
            out.push_str(&format!("pooled: {}\n", pool.describe()));
        }
        out.push_str(&format!("A/A runs: {}\n", tally(&self.aa)));
        out.push_str(&format!(
            "false-regression rate: {}{}\n",
            self.false_regression_rate.describe(),
            goal(self.goals.map(|g| g.no_false_regression), "none")
        ));
        out.push_str(&format!(
            "A/A pass rate: {}{}\n",
            self.aa_pass_rate.describe(),
            goal(
                self.goals.map(|g| g.aa_pass_rate),
                &format!("at least {:.0}%", GOAL_AA_PASS_RATE * 100.0)
            )
        ));
        if let Some(detection) = &self.detection_rate {
            out.push_str(&format!("runs with {knob}: {}\n", tally(&self.injected)));
            out.push_str(&format!("detection rate: {}\n", detection.describe()));
        }
        if let Some(capacity) = &self.capacity {
            out.push_str(&format!(
                "capacity regressions: A/A {}",
                capacity.false_regression_rate.describe()
            ));
            if let Some(detection) = &capacity.detection_rate {
                out.push_str(&format!("; with {knob} {}", detection.describe()));
            }
            out.push('\n');
        }
        if let Some(detectable) = &self.detectable {
            out.push_str(&format!(
                "smallest detectable change, median of the A/A runs: p50 {} over {} run(s), p99 {} over {} run(s)\n",
                detectable.p50.describe(GOAL_DETECTABLE_P50),
                detectable.p50.of,
                detectable.p99.describe(GOAL_DETECTABLE_P99),
                detectable.p99.of
            ));
        }
        out
    }
}

/// Runs `cargo loadgate qualify` and returns the exit code: 0 when every series ran (whatever the
/// rates), 1 when the baseline run failed, 2 for bad usage, 130/143 when interrupted.
pub fn run(opts: &QualifyOpts) -> i32 {
    super::block_on_current_thread(qualify(opts))
}

async fn qualify(opts: &QualifyOpts) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprint!("{}", render_error(&e));
            return ExitCode::OTHER_ERROR;
        }
    };
    // Load once here so a bad config is reported once, not by every child.
    let config = match crate::config::load(&opts.config.load_opts(cwd.clone())) {
        Ok(config) => config,
        Err(e) => {
            eprint!("{}", render_error(&e));
            return ExitCode::USAGE;
        }
    };
    if let Err(message) = check_usage(opts, &config.target.source) {
        eprintln!("error: {message}");
        return ExitCode::USAGE;
    }
    let out_dir = super::run::out_dir(opts.out_dir.as_deref(), &config, &cwd, Some("qualify"));
    let repo = config
        .source
        .package
        .as_ref()
        .map_or_else(|| cwd.clone(), |p| p.workspace_root.clone());
    let settings = SeriesSettings {
        measures: Some(SeriesSettings::measures(
            &config,
            if opts.paired {
                MeasurementMode::Paired
            } else {
                MeasurementMode::Stored
            },
        )),
        ..SeriesSettings::new(opts, crate::result::GitInfo::of(&repo))
    };
    // New runs from a dirty tree pooled with another commit's would be a mix no commit names
    // (a report of pooled runs alone makes none).
    let new_runs =
        opts.aa_runs.unwrap_or(opts.runs) > 0 || (!opts.inject.is_empty() && opts.runs > 0);
    if !opts.pool.is_empty() && new_runs && settings.dirty {
        eprintln!(
            "error: cannot pool with new runs made from a work tree with uncommitted changes: \
             no commit names what they measure\nhint: commit the change (or stash it), or pool \
             without new runs (--aa-runs 0 --runs 0)"
        );
        return ExitCode::USAGE;
    }
    // Read before anything in the out dir is cleared, so a refused pool changes nothing.
    let mut pools = Vec::new();
    let mut pooled = Vec::new();
    for dir in &opts.pool {
        match read_pool(&cwd.join(dir), &settings, &out_dir, &pools) {
            Ok((pool, runs)) => {
                eprintln!("      Pooled {}", pool.describe());
                pools.push(pool);
                pooled.extend(runs);
            }
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::USAGE;
            }
        }
    }
    if let Err((code, message)) = settings.prepare(&out_dir, opts.resume) {
        eprintln!("error: {message}");
        return code;
    }
    let store = out_dir.join("baselines");
    // A resumed series keeps the baseline its finished baseline run stored.
    let baseline_kept = opts.resume && out_dir.join("baseline").join(RUN_FILE).is_file();
    let mode = if opts.paired {
        ChildMode::Paired
    } else if baseline_kept {
        ChildMode::Stored { store: &store }
    } else {
        // A fresh baseline every time: an old one from another commit or config would not be
        // found, and one from earlier on this commit would not be fresh.
        if let Err(e) = std::fs::remove_dir_all(&store)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            eprintln!(
                "error: cannot clear the qualification store {}: {e}",
                store.display()
            );
            return ExitCode::OTHER_ERROR;
        }
        ChildMode::Stored { store: &store }
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprint!("{}", render_error(&e));
            return ExitCode::OTHER_ERROR;
        }
    };
    let child = ChildRun {
        exe: &exe,
        opts,
        mode,
        cwd: &cwd,
        resume: opts.resume,
    };
    let aa_runs = opts.aa_runs.unwrap_or(opts.runs);

    let injected = if opts.inject.is_empty() {
        String::new()
    } else {
        format!(
            ", {} run(s) with {}{}",
            opts.runs,
            opts.inject
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            if opts.paired { " on the head" } else { "" }
        )
    };
    eprintln!(
        "    Qualify {}{n} A/A run(s){injected}; runs are written to {}",
        if opts.paired {
            "paired (--base-same-as-head): "
        } else {
            "1 baseline run, "
        },
        out_dir.display(),
        n = aa_runs
    );
    let mut runs = pooled;
    if !opts.paired {
        match child.baseline(&out_dir).await {
            Ok(baseline) => runs.extend(baseline),
            Err(code) => return code,
        }
    }
    let injected_runs = if opts.inject.is_empty() { 0 } else { opts.runs };
    for (kind, count) in [(RunKind::AA, aa_runs), (RunKind::Injected, injected_runs)] {
        for index in 1..=count {
            match child.run(kind, index, &out_dir).await {
                Ok(run) => runs.push(run),
                Err(code) => return code,
            }
        }
    }
    let mut report = QualifyReport::new(mode.measurement(), &opts.inject, runs);
    report.pools = pools;
    println!();
    print!("{}", report.render());
    // The thresholds a stored comparison reaches rest on the baseline run, which paired mode
    // does not make: its runs state their own detectable changes instead.
    if !opts.paired {
        let kept = KeptRuns::read(&report.runs);
        println!();
        print!("{}", kept.reachable(&config));
        if opts.save {
            match kept.save(&repo, &opts.baseline_store) {
                Ok(lines) => {
                    for line in lines {
                        eprintln!("{line}");
                    }
                }
                Err(e) => {
                    eprint!("{}", render_error(&e));
                    return ExitCode::OTHER_ERROR;
                }
            }
        }
    }
    let json_path = opts
        .json
        .as_ref()
        .map_or_else(|| out_dir.join("qualify.json"), |p| cwd.join(p));
    match crate::result::write_json_atomic(&json_path, &report) {
        Ok(()) => println!("report: {}", json_path.display()),
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", json_path.display());
            return ExitCode::OTHER_ERROR;
        }
    }
    ExitCode::PASS
}

/// Flags that make no sense together, given the config's target: a usage error with its hint.
fn check_usage(opts: &QualifyOpts, source: &TargetSource) -> Result<(), String> {
    let aa_runs = opts.aa_runs.unwrap_or(opts.runs);
    let injected_runs = if opts.inject.is_empty() { 0 } else { opts.runs };
    if aa_runs == 0 && injected_runs == 0 && opts.pool.is_empty() {
        return Err(
            "nothing to run: no A/A run, and no injected run (no --inject, or --runs 0)\n\
             hint: give --inject KEY=VALUE with --runs N, or more than 0 A/A runs, or --pool DIR \
             to report an earlier series"
                .to_owned(),
        );
    }
    if !opts.paired {
        if !opts.pool.is_empty() {
            return Err(
                "--pool takes the runs of earlier `qualify --paired` series, and a stored \
                 series compares its runs with its own baseline run\nhint: add --paired, or \
                 make the stored series longer with --resume and a larger --runs"
                    .to_owned(),
            );
        }
        return Ok(());
    }
    if opts.save {
        return Err(
            "--save stores the baseline run, and `qualify --paired` makes none (each \
                    paired run boots its own base)\nhint: drop --save, or run `cargo loadgate \
                    qualify --save` without --paired to keep A/A runs as a stored baseline's \
                    noise samples"
                .to_owned(),
        );
    }
    if opts.target == Some(super::TargetKindArg::Url) || matches!(source, TargetSource::Url { .. })
    {
        return Err(
            "`qualify --paired` boots the head a second time as its base, and a url \
                    target is a service already running\nhint: qualify a url target without \
                    --paired, or use a `bin`, `image` or `dockerfile` target"
                .to_owned(),
        );
    }
    Ok(())
}

/// The baseline run and the A/A runs as stored results, for the noise figure and `--save`.
struct KeptRuns {
    /// The baseline run (the last baseline attempt, the one stored).
    baseline: Option<StoredResult>,
    /// The A/A runs whose result could be read.
    aa: Vec<StoredResult>,
}

impl KeptRuns {
    fn read(runs: &[QualifyRun]) -> Self {
        let stored = |r: &QualifyRun| {
            std::fs::read_to_string(&r.result)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .map(StoredResult::from_value)
                .filter(|s| s.get().is_ok())
        };
        Self {
            baseline: runs
                .iter()
                .rfind(|r| r.kind == RunKind::Baseline)
                .and_then(stored),
            aa: runs
                .iter()
                .filter(|r| r.kind == RunKind::AA && r.valid == Some(true))
                .filter_map(stored)
                .collect(),
        }
    }

    /// The thresholds a stored comparison can decide with the noise these runs measured (as the
    /// gate will use them after `--save`: the baseline as history, the A/A runs as qualify runs).
    fn reachable(&self, config: &LoadgateConfig) -> String {
        let figures = |s: &StoredResult| s.get().ok().map(|r| RunFigures::from_result(r, None));
        let runs = NoiseRuns {
            history: self.baseline.iter().filter_map(figures).collect(),
            qualify: self.aa.iter().filter_map(figures).collect(),
            skipped: SkippedAncestors::default(),
        };
        let family = primary_family(config);
        let model = noise_model(&runs, &CompareOptions::default());
        render_reachable(
            &model.reachable(
                &config.gate,
                DEFAULT_ALPHA,
                family,
                !config.ramp.steps.is_empty(),
            ),
            DEFAULT_ALPHA,
            family,
        )
    }

    /// Stores the baseline run as its commit's baseline in `store`, with the A/A runs as its
    /// noise samples; returns the lines to print.
    fn save(&self, repo: &Path, store: &str) -> Result<Vec<String>, BaselineError> {
        let Some(baseline) = &self.baseline else {
            return Err(BaselineError::NotSavable {
                reason: "the baseline run wrote no readable result".to_owned(),
            });
        };
        let mut entry = StoredEntry::from_result(baseline.clone(), false, unix_ms())?;
        let refused = entry.keep_noise_runs(self.aa.clone(), false);
        let store = StoreSpec::parse(store)?.open(repo);
        store.save(&entry)?;
        let mut lines = vec![format!(
            "       Saved baseline in {} for {} with {} A/A run(s) as noise samples",
            store.describe(),
            short(&entry.commit),
            entry.noise_runs.len()
        )];
        lines.extend(
            refused
                .into_iter()
                .map(|r| format!("     Warning an A/A run was not kept: {r}")),
        );
        Ok(lines)
    }
}

/// How the child runs compare.
#[derive(Clone, Copy, Debug)]
enum ChildMode<'a> {
    /// Against the baseline run stored in this private directory store.
    Stored {
        /// The store.
        store: &'a Path,
    },
    /// Paired with the head's own build booted again (`--base-same-as-head`).
    Paired,
}

impl ChildMode<'_> {
    fn measurement(self) -> MeasurementMode {
        match self {
            Self::Stored { .. } => MeasurementMode::Stored,
            Self::Paired => MeasurementMode::Paired,
        }
    }
}

struct ChildRun<'a> {
    exe: &'a Path,
    opts: &'a QualifyOpts,
    mode: ChildMode<'a>,
    cwd: &'a Path,
    /// Read back a run an earlier invocation of the series finished instead of making it again.
    resume: bool,
}

impl ChildRun<'_> {
    /// The baseline run of stored mode, measured again while the machine drifted during it (its
    /// calibration moved beyond the tolerance, so it could never be passed against), a few times
    /// at most; every attempt is returned, the stored one last. `Err` carries the exit code when
    /// qualification must stop, including when the baseline was not stored.
    async fn baseline(&self, out_dir: &Path) -> Result<Vec<QualifyRun>, i32> {
        let mut runs = Vec::new();
        let mut attempt = 1;
        let baseline = loop {
            let run = self.run(RunKind::Baseline, attempt, out_dir).await?;
            match run.calibration_drift {
                Some(drift)
                    if drift.abs() > CALIBRATION_TOLERANCE && attempt < BASELINE_ATTEMPTS =>
                {
                    eprintln!(
                        "     Warning the machine drifted {:+.1}% during the baseline run (beyond {:.0}%); \
                         measuring it again",
                        drift * 100.0,
                        CALIBRATION_TOLERANCE * 100.0
                    );
                    runs.push(run);
                    attempt += 1;
                }
                _ => break run,
            }
        };
        let saved = baseline.exit_code == Some(ExitCode::PASS) && baseline.valid == Some(true);
        if !saved {
            eprintln!(
                "error: the baseline run did not store a baseline (exit {}); see {}",
                baseline
                    .exit_code
                    .map_or_else(|| "by signal".to_owned(), |c| c.to_string()),
                baseline.result.with_file_name("output.log").display()
            );
            eprintln!(
                "hint: the run must be valid (the generator kept its schedule) and the package must be in a git repository"
            );
            return Err(ExitCode::OTHER_ERROR);
        }
        runs.push(baseline);
        Ok(runs)
    }

    /// The arguments of one child `run`.
    fn args(&self, kind: RunKind, dir: &Path) -> Vec<String> {
        let opts = self.opts;
        let mut args = vec!["loadgate".to_owned(), "run".to_owned()];
        let config = &opts.config;
        let mut push = |flag: &str, value: String| {
            args.push(flag.to_owned());
            args.push(value);
        };
        if let Some(path) = &config.manifest_path {
            push("--manifest-path", path.display().to_string());
        }
        if let Some(package) = &config.package {
            push("--package", package.clone());
        }
        if let Some(path) = &config.config {
            push("--config", path.display().to_string());
        }
        if let Some(profile) = &config.profile {
            push("--profile", profile.clone());
        }
        if let Some(value) = opts
            .target
            .and_then(|t| clap::ValueEnum::to_possible_value(&t))
        {
            push("--target", value.get_name().to_owned());
        }
        for (k, v) in &opts.env {
            push("--env", format!("{k}={v}"));
        }
        // The knob goes to the service in a stored run; in a paired one to the head alone, so
        // that the base stays the unchanged service it is compared with.
        let knob = match self.mode {
            ChildMode::Stored { .. } => "--env",
            ChildMode::Paired => "--head-env",
        };
        if kind == RunKind::Injected {
            for (k, v) in &opts.inject {
                push(knob, format!("{k}={v}"));
            }
        }
        push("--out-dir", dir.display().to_string());
        match self.mode {
            ChildMode::Stored { store } => {
                push("--baseline-store", format!("dir:{}", store.display()));
                // The baseline is HEAD's own: search from HEAD, whatever branch this is.
                push("--base-ref", "HEAD".to_owned());
                if kind == RunKind::Baseline {
                    args.push("--save-baseline".to_owned());
                    args.push("--allow-dirty".to_owned());
                } else {
                    args.push("--require-baseline".to_owned());
                }
            }
            ChildMode::Paired => {
                push("--mode", "paired".to_owned());
                args.push("--base-same-as-head".to_owned());
            }
        }
        args
    }

    /// Runs one child to its end; `Err` carries the exit code when qualification must stop
    /// (interrupted, or the child could not be started).
    async fn run(&self, kind: RunKind, index: u32, out_dir: &Path) -> Result<QualifyRun, i32> {
        let name = match kind {
            RunKind::Baseline if index == 1 => "baseline".to_owned(),
            RunKind::Baseline => format!("baseline-{index}"),
            RunKind::AA => format!("aa-{index:02}"),
            RunKind::Injected => format!("injected-{index:02}"),
        };
        let dir = out_dir.join(&name);
        let kept = dir.join(RUN_FILE);
        if self.resume
            && let Some(run) = read_kept_run(&kept, kind, index)
        {
            if !run.ended_in_error() {
                eprintln!("{} (read back)", run_line(&name, &run));
                return Ok(run);
            }
            // A run that failed measured nothing: pooling it would count a broken boot as a
            // run without a verdict. It is made again.
            eprintln!("{} (made again)", run_line(&name, &run));
        }
        let log_path = dir.join("output.log");
        let prepared =
            std::fs::create_dir_all(&dir).and_then(|()| std::fs::File::create(&log_path));
        let log = match prepared {
            Ok(log) => log,
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", log_path.display());
                return Err(ExitCode::OTHER_ERROR);
            }
        };
        let stderr = match log.try_clone() {
            Ok(f) => f,
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", log_path.display());
                return Err(ExitCode::OTHER_ERROR);
            }
        };
        let started = Instant::now();
        let spawned = tokio::process::Command::new(self.exe)
            .args(self.args(kind, &dir))
            .current_dir(self.cwd)
            .env("LOADGATE_RUN_ID", format!("qualify-{name}"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                eprintln!("error: cannot start {}: {e}", self.exe.display());
                return Err(ExitCode::OTHER_ERROR);
            }
        };
        let status = wait_forwarding_signals(&mut child).await?;
        let result_path = dir.join("result.json");
        let (result, unreadable) = read_child_result(&result_path);
        let verdict = result.as_ref().and_then(|r| r.verdict.as_ref());
        let run = QualifyRun {
            kind,
            index,
            exit_code: status,
            outcome: verdict.map(|v| v.outcome.as_str().to_owned()),
            unreadable,
            rule_fired: verdict.map(|v| v.rule_fired.clone()),
            regressed: result.as_ref().map(regressed_metrics).unwrap_or_default(),
            valid: result.as_ref().and_then(|r| r.valid),
            calibration_drift: result
                .as_ref()
                .and_then(|r| r.calibration.as_ref())
                .and_then(|c| c.drift),
            capacity: result
                .as_ref()
                .and_then(|r| overall(r, Metric::Capacity))
                .map(|m| m.outcome),
            detectable_p50: result
                .as_ref()
                .and_then(|r| overall(r, Metric::P50))
                .and_then(|m| m.detectable),
            detectable_p99: result
                .as_ref()
                .and_then(|r| overall(r, Metric::P99))
                .and_then(|m| m.detectable),
            result: result_path,
            seconds: started.elapsed().as_secs_f64(),
            pooled_from: None,
        };
        eprintln!("{}", run_line(&name, &run));
        if let Err(e) = crate::result::write_json_atomic(&kept, &run) {
            eprintln!(
                "     Warning cannot keep {} ({e}); --resume would make this run again",
                kept.display()
            );
        }
        Ok(run)
    }
}

/// A run an earlier invocation finished, as it kept it in `path`; `None` when there is none, or it
/// cannot be read, or it is not the run asked for (then the run is made again).
fn read_kept_run(path: &Path, kind: RunKind, index: u32) -> Option<QualifyRun> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<QualifyRun>(&text)
        .ok()
        .filter(|run| run.kind == kind && run.index == index)
}

/// What a series' runs are made with: two invocations with equal settings make runs of one
/// series, which `--resume` may pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct SeriesSettings {
    /// `stored` or `paired`.
    mode: MeasurementMode,
    manifest_path: Option<PathBuf>,
    package: Option<String>,
    config: Option<PathBuf>,
    profile: Option<String>,
    /// `--target`, as written.
    target: Option<String>,
    /// `--env`, KEY=VALUE.
    env: Vec<String>,
    /// `--inject`, KEY=VALUE.
    inject: Vec<String>,
    /// HEAD's commit, when the package is in a git repository.
    commit: Option<String>,
    /// Whether the work tree had uncommitted changes.
    dirty: bool,
    /// What the runs measure and how they are judged: a hash of the resolved configuration's
    /// hash (in the series' mode) and its `[gate]`. Two commits whose profiles resolve alike
    /// measure alike, which `--pool` checks. Absent in a series kept before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    measures: Option<String>,
}

impl SeriesSettings {
    /// What `config` measures in `mode` and how it judges: [`SeriesSettings::measures`].
    fn measures(config: &LoadgateConfig, mode: MeasurementMode) -> String {
        let identity = serde_json::json!({
            "config_hash": crate::result::config_hash(config, mode),
            "gate": config.gate,
        });
        crate::result::hex_sha256(identity.to_string().as_bytes())
    }

    fn new(opts: &QualifyOpts, git: Option<crate::result::GitInfo>) -> Self {
        let pairs = |kv: &[(String, String)]| kv.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Self {
            mode: if opts.paired {
                MeasurementMode::Paired
            } else {
                MeasurementMode::Stored
            },
            manifest_path: opts.config.manifest_path.clone(),
            package: opts.config.package.clone(),
            config: opts.config.config.clone(),
            profile: opts.config.profile.clone(),
            target: opts
                .target
                .and_then(|t| clap::ValueEnum::to_possible_value(&t))
                .map(|v| v.get_name().to_owned()),
            env: pairs(&opts.env),
            inject: pairs(&opts.inject),
            dirty: git.as_ref().is_some_and(|g| g.dirty),
            commit: git.map(|g| g.commit),
            measures: None,
        }
    }

    /// The settings that differ from `earlier`'s, as "name: `then` then, `now` now", leaving out
    /// the fields named in `ignore`.
    fn differences(&self, earlier: &Self, ignore: &[&str]) -> Vec<String> {
        let (Ok(serde_json::Value::Object(now)), Ok(serde_json::Value::Object(then))) =
            (serde_json::to_value(self), serde_json::to_value(earlier))
        else {
            return vec!["the settings".to_owned()];
        };
        // A dirty tree is refused on its own: it is not a setting to line up.
        now.iter()
            .filter(|(key, _)| key.as_str() != "dirty" && !ignore.contains(&key.as_str()))
            // A series kept before `measures` was recorded is compared on the rest.
            .filter(|(key, _)| key.as_str() != "measures" || then.contains_key("measures"))
            .filter(|(key, value)| then.get(*key) != Some(*value))
            .map(|(key, value)| {
                let then = then.get(key).unwrap_or(&serde_json::Value::Null);
                format!("{}: {then} then, {value} now", key.replace('_', "-"))
            })
            .collect()
    }

    /// Checks that a resumed series may go on in `out_dir` (same settings and commit, clean
    /// trees), or clears the runs an earlier series kept there when starting anew; then keeps
    /// these settings. `Err` carries the exit code and the message.
    fn prepare(&self, out_dir: &Path, resume: bool) -> Result<(), (i32, String)> {
        let path = out_dir.join(SERIES_FILE);
        if resume {
            let refuse = |why: String, hint: &str| {
                Err((
                    ExitCode::USAGE,
                    format!(
                        "cannot resume the qualification in {}: {why}\nhint: {hint}",
                        out_dir.display()
                    ),
                ))
            };
            let earlier = match std::fs::read_to_string(&path) {
                Ok(text) => match serde_json::from_str::<Self>(&text) {
                    Ok(earlier) => Some(earlier),
                    Err(e) => {
                        return refuse(
                            format!("{} cannot be read: {e}", path.display()),
                            "start anew without --resume",
                        );
                    }
                },
                // Nothing to resume yet: the series starts here.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    return Err((
                        ExitCode::OTHER_ERROR,
                        format!("cannot read {}: {e}", path.display()),
                    ));
                }
            };
            if let Some(earlier) = earlier {
                let differences = self.differences(&earlier, &[]);
                if !differences.is_empty() {
                    return refuse(
                        format!(
                            "its runs were made with other settings ({})",
                            differences.join("; ")
                        ),
                        "resume with the same flags at the same commit, or give another \
                         --out-dir",
                    );
                }
                if earlier.dirty || self.dirty {
                    return refuse(
                        "the work tree had uncommitted changes, so this build cannot be told \
                         from the one the earlier runs measured"
                            .to_owned(),
                        "commit the change (or stash it) and start anew without --resume",
                    );
                }
            }
        } else {
            // Starting anew: runs an earlier series kept here must not be read back later as
            // runs of this one.
            let run_dirs = std::fs::read_dir(out_dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()));
            for entry in run_dirs {
                let kept = entry.path().join(RUN_FILE);
                if let Err(e) = std::fs::remove_file(&kept)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    return Err((
                        ExitCode::OTHER_ERROR,
                        format!("cannot clear {}: {e}", kept.display()),
                    ));
                }
            }
        }
        std::fs::create_dir_all(out_dir)
            .and_then(|()| crate::result::write_json_atomic(&path, self))
            .map_err(|e| {
                (
                    ExitCode::OTHER_ERROR,
                    format!("cannot write {}: {e}", path.display()),
                )
            })
    }
}

/// An earlier series whose kept runs were pooled into this report (`--pool`).
#[derive(Clone, Debug, Serialize)]
pub struct Pool {
    /// Its directory.
    pub dir: PathBuf,
    /// The commit its runs measured.
    pub commit: Option<String>,
    /// Its A/A runs pooled.
    pub aa: u32,
    /// Its injected runs pooled (only when its knob is this series' own).
    pub injected: u32,
    /// Whether its configuration was checked to be this series' own; a series kept before the
    /// check existed is pooled on its flags alone, and the report says so.
    pub configuration_checked: bool,
    /// Its runs that ended in an error (they measured nothing), left out.
    pub left_out_errors: u32,
}

impl Pool {
    fn describe(&self) -> String {
        format!(
            "{} A/A and {} injected run(s) from {} (commit {}{}{})",
            self.aa,
            self.injected,
            self.dir.display(),
            self.commit.as_deref().map_or("unknown", short),
            match self.left_out_errors {
                0 => String::new(),
                n => format!("; {n} run(s) that ended in an error left out"),
            },
            if self.configuration_checked {
                ""
            } else {
                "; its resolved configuration was not recorded, so only its flags were compared"
            }
        )
    }
}

/// The runs an earlier series kept in `dir`, to pool with `settings`' series: its A/A runs, and its
/// injected runs when its knob is this one's. The earlier series must have been made with the
/// same settings but its commit and knob, from a clean tree, and be neither this series' own
/// `out_dir` nor one already in `pooled`. `Err` is a usage error's message.
fn read_pool(
    dir: &Path,
    settings: &SeriesSettings,
    out_dir: &Path,
    pooled: &[Pool],
) -> Result<(Pool, Vec<QualifyRun>), String> {
    let refuse = |why: String, hint: &str| {
        Err(format!(
            "cannot pool the runs in {}: {why}\nhint: {hint}",
            dir.display()
        ))
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(dir, out_dir) {
        return refuse(
            "it is this series' own --out-dir, whose runs are this series' (or cleared by it)"
                .to_owned(),
            "use --resume to go on with a series; --pool takes another series' directory",
        );
    }
    if pooled.iter().any(|p| same(dir, &p.dir)) {
        return refuse(
            "it is given twice, and its runs would count twice".to_owned(),
            "give each --pool directory once",
        );
    }
    let path = dir.join(SERIES_FILE);
    let earlier = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<SeriesSettings>(&text).map_err(|e| e.to_string()))
    {
        Ok(earlier) => earlier,
        Err(e) => {
            return refuse(
                format!("{} cannot be read: {e}", path.display()),
                &format!(
                    "give the --out-dir of an earlier `qualify --paired` series, or a copy of its \
                     {SERIES_FILE} and */{RUN_FILE}"
                ),
            );
        }
    };
    if let (Some(then), Some(now)) = (&earlier.measures, &settings.measures)
        && then != now
    {
        return refuse(
            format!(
                "its runs measured another configuration: the profile resolves otherwise at its \
                 commit {} (its workload, generator, ramp, [paired] or [gate] differ; hash {} \
                 then, {} now)",
                earlier.commit.as_deref().map_or("unknown", short),
                short(then),
                short(now)
            ),
            "pool only series whose profile resolves alike (`cargo loadgate check` at both \
             commits shows the difference)",
        );
    }
    let differences = settings.differences(&earlier, &["commit", "inject", "measures"]);
    if !differences.is_empty() {
        return refuse(
            format!(
                "its runs were made with other settings ({})",
                differences.join("; ")
            ),
            "pool only series made with the same --profile, --env, --target and config",
        );
    }
    if earlier.dirty {
        return refuse(
            "its runs were made from a work tree with uncommitted changes, which no commit \
             names"
                .to_owned(),
            "pool only series made from a clean tree",
        );
    }
    let same_knob = earlier.inject == settings.inject;
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.path().join(RUN_FILE)).collect(),
        Err(e) => return refuse(format!("it cannot be listed: {e}"), "check the path"),
    };
    entries.sort();
    let mut runs = Vec::new();
    let mut errors = 0;
    for path in entries.iter().filter(|p| p.is_file()) {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let run: QualifyRun = serde_json::from_str(&text).map_err(|e| {
            format!(
                "cannot pool {}: it is not a kept qualification run: {e}",
                path.display()
            )
        })?;
        let wanted = run.kind == RunKind::AA || (run.kind == RunKind::Injected && same_knob);
        // A run that ended in an error measured nothing (`--resume` would make it again).
        if wanted && run.ended_in_error() {
            errors += 1;
        } else if wanted {
            runs.push(QualifyRun {
                pooled_from: Some(dir.to_path_buf()),
                ..run
            });
        }
    }
    let count =
        |kind| u32::try_from(runs.iter().filter(|r| r.kind == kind).count()).unwrap_or(u32::MAX);
    let pool = Pool {
        dir: dir.to_path_buf(),
        commit: earlier.commit.clone(),
        aa: count(RunKind::AA),
        injected: count(RunKind::Injected),
        configuration_checked: earlier.measures.is_some() && settings.measures.is_some(),
        left_out_errors: errors,
    };
    if runs.is_empty() {
        return refuse(
            "it holds no A/A run, and no injected run with this series' knob".to_owned(),
            "pool a directory where an earlier series finished runs",
        );
    }
    Ok((pool, runs))
}

/// Waits for the child; on SIGINT or SIGTERM sends the same signal to it (so it cleans up its
/// target), waits for it, and stops qualification with 130 or 143.
async fn wait_forwarding_signals(child: &mut tokio::process::Child) -> Result<Option<i32>, i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        eprintln!("error: cannot install signal handlers");
        return Err(ExitCode::OTHER_ERROR);
    };
    let forward = |child: &tokio::process::Child, sig: nix::sys::signal::Signal| {
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
        }
    };
    let code = tokio::select! {
        status = child.wait() => {
            return match status {
                Ok(status) => Ok(status.code()),
                Err(e) => {
                    eprintln!("error: waiting for a run failed: {e}");
                    Err(ExitCode::OTHER_ERROR)
                }
            };
        }
        _ = int.recv() => {
            forward(child, nix::sys::signal::Signal::SIGINT);
            ExitCode::INTERRUPTED
        }
        _ = term.recv() => {
            forward(child, nix::sys::signal::Signal::SIGTERM);
            ExitCode::TERMINATED
        }
    };
    let _ = child.wait().await;
    eprintln!("error: qualification interrupted; the run in progress cleaned up and stopped");
    Err(code)
}

/// A child's result, or why the one it wrote cannot be read (its path and the read error). A run
/// that failed before writing its result has none, which is not an error: its exit code tells.
fn read_child_result(path: &Path) -> (Option<RunResult>, Option<String>) {
    match crate::result::read_result(path) {
        Ok(result) => (Some(result), None),
        Err(ReadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            (None, None)
        }
        Err(e) => {
            let cause =
                std::error::Error::source(&e).map_or_else(String::new, |c| format!(": {c}"));
            (None, Some(format!("{e}{cause}")))
        }
    }
}

/// A result's comparison of `metric` for all operations together, when it has one.
fn overall(result: &RunResult, metric: Metric) -> Option<&MetricComparison> {
    result
        .comparison
        .as_ref()?
        .metrics
        .iter()
        .find(|m| m.metric == metric && m.operation.is_none())
}

/// The metrics that regressed in a result, e.g. `p99 transfer`.
fn regressed_metrics(result: &RunResult) -> Vec<String> {
    result
        .comparison
        .iter()
        .flat_map(|c| &c.metrics)
        .filter(|m| m.outcome == MetricOutcome::Regression)
        .map(|m| match &m.operation {
            Some(op) => format!("{} {op}", m.metric.as_str()),
            None => m.metric.as_str().to_owned(),
        })
        .collect()
}

fn run_line(name: &str, run: &QualifyRun) -> String {
    if let Some(why) = &run.unreadable {
        return format!("{name:>12} error: {why} [{:.0} s]", run.seconds);
    }
    let what = match (&run.outcome, run.exit_code) {
        (Some(outcome), _) if !run.regressed.is_empty() => {
            format!("{outcome} ({})", run.regressed.join(", "))
        }
        (Some(outcome), _) => match &run.rule_fired {
            Some(rule) if outcome != "pass" => format!("{outcome}: {rule}"),
            _ => outcome.clone(),
        },
        (None, Some(code)) => format!("no verdict (exit {code})"),
        (None, None) => "no verdict (killed by a signal)".to_owned(),
    };
    format!("{name:>12} {what} [{:.0} s]", run.seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_intervals_match_known_values() {
        // 0 of 10: the rule of three's neighbour, Wilson upper end 27.8%.
        let r = Rate::wilson(0, 10);
        assert_eq!((r.estimate, r.low), (0.0, 0.0));
        assert!((r.high - 0.2775).abs() < 5e-4, "{r:?}");
        // 9 of 10: 59.6%–98.2%.
        let r = Rate::wilson(9, 10);
        assert!((r.low - 0.5958).abs() < 5e-4, "{r:?}");
        assert!((r.high - 0.9821).abs() < 5e-4, "{r:?}");
        // Nothing decided: the whole range.
        let r = Rate::wilson(0, 0);
        assert_eq!((r.low, r.high), (0.0, 1.0));
    }

    fn run(kind: RunKind, outcome: Option<&str>) -> QualifyRun {
        QualifyRun {
            kind,
            index: 1,
            exit_code: Some(0),
            outcome: outcome.map(str::to_owned),
            unreadable: None,
            rule_fired: None,
            regressed: Vec::new(),
            valid: Some(true),
            calibration_drift: None,
            capacity: None,
            detectable_p50: None,
            detectable_p99: None,
            result: PathBuf::from("result.json"),
            seconds: 1.0,
            pooled_from: None,
        }
    }

    #[test]
    fn rates_count_regressions_among_runs_that_decided() {
        let runs = vec![
            run(RunKind::Baseline, Some("no-baseline")),
            run(RunKind::AA, Some("pass")),
            run(RunKind::AA, Some("inconclusive")),
            run(RunKind::AA, Some("regression")),
            run(RunKind::AA, None),
            run(RunKind::Injected, Some("regression")),
            run(RunKind::Injected, Some("regression")),
            run(RunKind::Injected, Some("inconclusive")),
        ];
        let inject = vec![("DEMO_CPU_US".to_owned(), "3000".to_owned())];
        let report = QualifyReport::new(MeasurementMode::Stored, &inject, runs);
        assert_eq!(
            report.aa,
            Tally {
                pass: 1,
                regression: 1,
                inconclusive: 1,
                no_verdict: 1,
                unreadable: 0
            }
        );
        assert_eq!(
            (
                report.false_regression_rate.hits,
                report.false_regression_rate.of
            ),
            (1, 3)
        );
        let detection = report.detection_rate.unwrap();
        assert_eq!((detection.hits, detection.of), (2, 3));
        insta::assert_snapshot!(report.render(), @r"
        A/A runs: 1 pass, 1 regression, 1 inconclusive, 1 without a verdict
        false-regression rate: 1/3 = 33% (95% interval 6%–79%)
        A/A pass rate: 1/4 = 25% (95% interval 5%–70%)
        runs with DEMO_CPU_US=3000: 0 pass, 2 regression, 1 inconclusive, 0 without a verdict
        detection rate: 2/3 = 67% (95% interval 21%–94%)
        ");
        // A stored qualification states no paired figures and no goals.
        assert!(report.capacity.is_none() && report.detectable.is_none() && report.goals.is_none());
        let none = QualifyReport::new(MeasurementMode::Stored, &[], Vec::new());
        assert!(none.detection_rate.is_none());
        assert!(!none.render().contains("detection"));
    }

    /// Regression: an unreadable child result was taken for "no verdict", so a broken run was
    /// counted as an invalid one and its read error was never shown.
    #[test]
    fn an_unreadable_child_result_is_an_error_of_its_run_not_a_run_without_a_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing/result.json");
        assert!(matches!(read_child_result(&missing), (None, None)));
        let broken = dir.path().join("result.json");
        std::fs::write(&broken, "{\"format_version\": 1,").unwrap();
        let (result, unreadable) = read_child_result(&broken);
        assert!(result.is_none());
        let why = unreadable.expect("an unreadable result is named");
        assert!(
            why.starts_with(&format!("{}:1:", broken.display()))
                && why.contains("is not a readable run result"),
            "{why}"
        );
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/report/after.json");
        let (result, unreadable) = read_child_result(&fixture);
        assert!(result.is_some() && unreadable.is_none(), "{unreadable:?}");

        let failed = QualifyRun {
            unreadable: Some(why.clone()),
            ..run(RunKind::AA, None)
        };
        assert_eq!(
            run_line("aa-02", &failed),
            format!("       aa-02 error: {why} [1 s]")
        );
        let report = QualifyReport::new(
            MeasurementMode::Stored,
            &[],
            vec![run(RunKind::AA, None), failed],
        );
        assert_eq!((report.aa.no_verdict, report.aa.unreadable), (1, 1));
        assert_eq!(report.false_regression_rate.of, 0);
        assert!(
            report
                .render()
                .starts_with("A/A runs: 0 pass, 0 regression, 0 inconclusive, 1 without a verdict, 1 with an unreadable result\n"),
            "{}",
            report.render()
        );
    }

    fn opts() -> QualifyOpts {
        QualifyOpts {
            config: crate::cli::ConfigOpts {
                package: Some("demo-service".to_owned()),
                profile: Some("ci".to_owned()),
                ..Default::default()
            },
            target: Some(crate::cli::TargetKindArg::Process),
            runs: 3,
            inject: vec![("DEMO_CPU_US".to_owned(), "3000".to_owned())],
            env: vec![("RUST_LOG".to_owned(), "warn".to_owned())],
            out_dir: None,
            json: None,
            paired: false,
            save: true,
            baseline_store: "notes".to_owned(),
            aa_runs: None,
            resume: false,
            pool: Vec::new(),
        }
    }

    /// A child's command line parsed as `run`, as the child will parse it.
    fn parsed(child: &ChildRun<'_>, kind: RunKind) -> crate::cli::RunOpts {
        let mut argv = vec!["cargo-loadgate".to_owned()];
        argv.extend(child.args(kind, Path::new("/q/x")));
        let crate::cli::CargoOpts::Loadgate(parsed) =
            crate::cli::parse_args(argv).expect("child args parse");
        match parsed.command {
            crate::cli::Command::Run(run) => *run,
            other => panic!("not run: {other:?}"),
        }
    }

    #[test]
    fn children_store_then_require_the_baseline_and_only_injected_runs_get_the_knob() {
        let opts = opts();
        let child = ChildRun {
            exe: Path::new("cargo-loadgate"),
            opts: &opts,
            mode: ChildMode::Stored {
                store: Path::new("/q/baselines"),
            },
            cwd: Path::new("/"),
            resume: false,
        };
        let base = child
            .args(RunKind::Baseline, Path::new("/q/baseline"))
            .join(" ");
        assert_eq!(
            base,
            "loadgate run --package demo-service --profile ci --target process --env RUST_LOG=warn \
             --out-dir /q/baseline --baseline-store dir:/q/baselines --base-ref HEAD \
             --save-baseline --allow-dirty"
        );
        let aa = child.args(RunKind::AA, Path::new("/q/aa-01")).join(" ");
        assert!(aa.ends_with("--base-ref HEAD --require-baseline"), "{aa}");
        assert!(!aa.contains("DEMO_CPU_US"), "{aa}");
        let injected = child.args(RunKind::Injected, Path::new("/q/i")).join(" ");
        assert!(injected.contains("--env DEMO_CPU_US=3000"), "{injected}");
        // Every child command line parses as a `run`, and none of them pairs.
        for kind in [RunKind::Baseline, RunKind::AA, RunKind::Injected] {
            let run = parsed(&child, kind);
            assert!(run.mode.is_none() && !run.paired && !run.base_same_as_head);
            assert!(run.head_env.is_empty());
        }
    }

    fn kept(kind: RunKind, index: u32, outcome: &str) -> QualifyRun {
        QualifyRun {
            index,
            ..run(kind, Some(outcome))
        }
    }

    fn at(commit: &str, dirty: bool) -> Option<crate::result::GitInfo> {
        Some(crate::result::GitInfo {
            commit: commit.to_owned(),
            dirty,
        })
    }

    #[test]
    fn a_series_resumes_only_with_its_own_settings_and_commit_on_a_clean_tree() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let settings = SeriesSettings::new(&opts(), at("abc", false));
        settings.prepare(out, false).unwrap();
        assert!(out.join(SERIES_FILE).is_file());
        // The same flags at the same commit go on.
        settings.prepare(out, true).unwrap();

        let refused = |now: SeriesSettings| {
            let (code, message) = now.prepare(out, true).unwrap_err();
            assert_eq!(code, ExitCode::USAGE, "{message}");
            message
        };
        let other_profile = QualifyOpts {
            config: crate::cli::ConfigOpts {
                profile: Some("full".to_owned()),
                ..opts().config
            },
            ..opts()
        };
        let message = refused(SeriesSettings::new(&other_profile, at("abc", false)));
        assert!(
            message.contains("profile: \"ci\" then, \"full\" now"),
            "{message}"
        );
        assert!(message.contains("hint: "), "{message}");
        let message = refused(SeriesSettings::new(&opts(), at("def", false)));
        assert!(
            message.contains("commit: \"abc\" then, \"def\" now"),
            "{message}"
        );
        let other_knob = QualifyOpts {
            inject: vec![("DEMO_CPU_US".to_owned(), "1100".to_owned())],
            ..opts()
        };
        let message = refused(SeriesSettings::new(&other_knob, at("abc", false)));
        assert!(message.contains("inject: "), "{message}");
        let message = refused(SeriesSettings::new(&opts(), at("abc", true)));
        assert!(message.contains("uncommitted changes"), "{message}");
        // The refusals kept the earlier series' settings.
        settings.prepare(out, true).unwrap();

        // A series made from a dirty tree cannot be resumed, whatever the tree is now.
        let dirty = tempfile::tempdir().unwrap();
        SeriesSettings::new(&opts(), at("abc", true))
            .prepare(dirty.path(), false)
            .unwrap();
        let (_, message) = settings.prepare(dirty.path(), true).unwrap_err();
        assert!(message.contains("uncommitted changes"), "{message}");

        // Nothing to resume yet: the series starts there.
        let fresh = tempfile::tempdir().unwrap();
        settings.prepare(&fresh.path().join("new"), true).unwrap();
        assert!(fresh.path().join("new").join(SERIES_FILE).is_file());
    }

    #[test]
    fn kept_runs_are_read_back_as_themselves_and_cleared_by_a_new_series() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let settings = SeriesSettings::new(&opts(), at("abc", false));
        settings.prepare(out, false).unwrap();
        let path = out.join("aa-02").join(RUN_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut finished = kept(RunKind::AA, 2, "pass");
        finished.detectable_p50 = Some(0.081);
        crate::result::write_json_atomic(&path, &finished).unwrap();

        let back = read_kept_run(&path, RunKind::AA, 2).expect("read back");
        assert_eq!(back.outcome.as_deref(), Some("pass"));
        assert_eq!(back.detectable_p50, Some(0.081));
        // Another run's place, or a file that is not a kept run, is made again.
        assert!(read_kept_run(&path, RunKind::AA, 3).is_none());
        assert!(read_kept_run(&path, RunKind::Injected, 2).is_none());
        std::fs::write(&path, "{ not json").unwrap();
        assert!(read_kept_run(&path, RunKind::AA, 2).is_none());

        // Starting anew removes what the earlier series kept, so a later --resume cannot take it
        // for a run of the new series.
        crate::result::write_json_atomic(&path, &finished).unwrap();
        settings.prepare(out, false).unwrap();
        assert!(!path.exists());
        assert!(path.parent().unwrap().is_dir(), "only the kept file goes");
    }

    #[test]
    fn a_resumed_run_is_read_back_without_starting_a_child() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let path = out.join("injected-01").join(RUN_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        crate::result::write_json_atomic(&path, &kept(RunKind::Injected, 1, "regression")).unwrap();
        let opts = opts();
        // No such program: a run that was not read back could not start.
        let exe = out.join("no-such-cargo-loadgate");
        let child = |resume| ChildRun {
            exe: &exe,
            opts: &opts,
            mode: ChildMode::Paired,
            cwd: out,
            resume,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let run = runtime
            .block_on(child(true).run(RunKind::Injected, 1, out))
            .expect("read back");
        assert_eq!(run.outcome.as_deref(), Some("regression"));
        // Without --resume the run is made, which here cannot start.
        let made = runtime.block_on(child(false).run(RunKind::Injected, 1, out));
        assert_eq!(made.err(), Some(ExitCode::OTHER_ERROR));
        // Resumed, a run that was never finished is made too.
        let missing = runtime.block_on(child(true).run(RunKind::Injected, 2, out));
        assert_eq!(missing.err(), Some(ExitCode::OTHER_ERROR));
    }

    #[test]
    fn a_resumed_run_that_ended_in_an_error_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let opts = opts();
        let exe = out.join("no-such-cargo-loadgate");
        let child = ChildRun {
            exe: &exe,
            opts: &opts,
            mode: ChildMode::Paired,
            cwd: out,
            resume: true,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let keep = |index: u32, run: QualifyRun| {
            let path = out.join(format!("aa-{index:02}")).join(RUN_FILE);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            crate::result::write_json_atomic(&path, &QualifyRun { index, ..run }).unwrap();
        };
        let failed = |exit_code| QualifyRun {
            exit_code,
            valid: None,
            ..run(RunKind::AA, None)
        };
        // A boot failure, another error, a signal and an unreadable result measured nothing:
        // each is made again (which here cannot start).
        keep(1, failed(Some(ExitCode::TARGET_FAILED)));
        keep(2, failed(Some(ExitCode::OTHER_ERROR)));
        keep(3, failed(None));
        keep(
            4,
            QualifyRun {
                unreadable: Some("result.json:1:1: not a run result".to_owned()),
                ..failed(Some(ExitCode::PASS))
            },
        );
        for index in 1..=4 {
            assert!(failed(Some(1)).ended_in_error());
            let made = runtime.block_on(child.run(RunKind::AA, index, out));
            assert_eq!(made.err(), Some(ExitCode::OTHER_ERROR), "run {index}");
        }
        // An invalid run (no verdict, exit 21) and a regression are measurements: read back.
        keep(5, failed(Some(ExitCode::INVALID_RUN)));
        keep(6, kept(RunKind::AA, 6, "regression"));
        let invalid = runtime.block_on(child.run(RunKind::AA, 5, out)).unwrap();
        assert_eq!(invalid.exit_code, Some(ExitCode::INVALID_RUN));
        let regression = runtime.block_on(child.run(RunKind::AA, 6, out)).unwrap();
        assert_eq!(regression.outcome.as_deref(), Some("regression"));
    }

    /// An earlier series' directory as `qualify` keeps it: its settings and finished runs.
    fn kept_series(dir: &Path, settings: &SeriesSettings, runs: &[QualifyRun]) {
        settings.prepare(dir, false).unwrap();
        for run in runs {
            let name = match run.kind {
                RunKind::AA => format!("aa-{:02}", run.index),
                _ => format!("injected-{:02}", run.index),
            };
            let path = dir.join(name).join(RUN_FILE);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            crate::result::write_json_atomic(&path, run).unwrap();
        }
    }

    #[test]
    fn pooled_series_add_their_runs_across_commits_but_not_across_settings() {
        let dir = tempfile::tempdir().unwrap();
        let paired = QualifyOpts {
            paired: true,
            save: false,
            ..opts()
        };
        let measuring = |settings: SeriesSettings, measures: &str| SeriesSettings {
            measures: Some(measures.to_owned()),
            ..settings
        };
        let now = measuring(SeriesSettings::new(&paired, at("def", false)), "m1");
        let out = dir.path().join("now");
        let earlier = dir.path().join("earlier");
        kept_series(
            &earlier,
            &measuring(SeriesSettings::new(&paired, at("abc", false)), "m1"),
            &[
                kept(RunKind::AA, 1, "pass"),
                kept(RunKind::AA, 2, "inconclusive"),
                // A boot failure measured nothing: left out, and said so.
                QualifyRun {
                    index: 3,
                    exit_code: Some(ExitCode::TARGET_FAILED),
                    ..run(RunKind::AA, None)
                },
                kept(RunKind::Injected, 1, "regression"),
            ],
        );
        let (pool, runs) = read_pool(&earlier, &now, &out, &[]).unwrap();
        assert_eq!((pool.aa, pool.injected, pool.left_out_errors), (2, 1, 1));
        assert_eq!(pool.commit.as_deref(), Some("abc"));
        assert!(
            runs.iter()
                .all(|r| r.pooled_from.as_deref() == Some(earlier.as_path()))
        );
        assert_eq!(
            pool.describe(),
            format!(
                "2 A/A and 1 injected run(s) from {} (commit abc; 1 run(s) that ended in an error \
                 left out)",
                earlier.display()
            )
        );
        let mut report = QualifyReport::new(MeasurementMode::Paired, &paired.inject, runs);
        report.pools = vec![pool.clone()];
        assert_eq!((report.aa.pass, report.aa.inconclusive), (1, 1));
        assert_eq!(report.detection_rate.map(|r| (r.hits, r.of)), Some((1, 1)));
        assert!(
            report
                .render()
                .contains("pooled: 2 A/A and 1 injected run(s) from ")
        );

        // Another knob: its A/A runs pool, its injected ones do not.
        let other_knob = QualifyOpts {
            inject: vec![("DEMO_CPU_US".to_owned(), "1100".to_owned())],
            ..QualifyOpts {
                paired: true,
                save: false,
                ..opts()
            }
        };
        let (pool, _) = read_pool(
            &earlier,
            &measuring(SeriesSettings::new(&other_knob, at("def", false)), "m1"),
            &out,
            &[],
        )
        .unwrap();
        assert_eq!((pool.aa, pool.injected), (2, 0));

        // The same flags, but the profile resolves otherwise at this commit: refused.
        let message = read_pool(
            &earlier,
            &measuring(SeriesSettings::new(&paired, at("def", false)), "m2"),
            &out,
            &[],
        )
        .unwrap_err();
        assert!(
            message.contains("measured another configuration"),
            "{message}"
        );
        // A series kept before the configuration was recorded pools on its flags, and says so.
        let old = dir.path().join("old");
        kept_series(
            &old,
            &SeriesSettings::new(&paired, at("abc", false)),
            &[kept(RunKind::AA, 1, "pass")],
        );
        let (pool, _) = read_pool(&old, &now, &out, &[]).unwrap();
        assert!(!pool.configuration_checked);
        assert!(pool.describe().contains("only its flags were compared"));

        // Another profile is another measurement: refused, naming it.
        let other_profile = QualifyOpts {
            config: crate::cli::ConfigOpts {
                profile: Some("full".to_owned()),
                ..opts().config
            },
            ..QualifyOpts {
                paired: true,
                save: false,
                ..opts()
            }
        };
        let message = read_pool(
            &earlier,
            &SeriesSettings::new(&other_profile, at("def", false)),
            &out,
            &[],
        )
        .unwrap_err();
        assert!(
            message.contains("profile: \"ci\" then, \"full\" now"),
            "{message}"
        );
        assert!(message.contains("hint: "), "{message}");
        // Twice, or this series' own directory: refused.
        let (first, _) = read_pool(&earlier, &now, &out, &[]).unwrap();
        let message = read_pool(&earlier, &now, &out, &[first]).unwrap_err();
        assert!(message.contains("given twice"), "{message}");
        let message = read_pool(&earlier, &now, &earlier, &[]).unwrap_err();
        assert!(message.contains("own --out-dir"), "{message}");
        // A dirty series, a directory without a series, and one without runs: refused.
        let dirty = dir.path().join("dirty");
        kept_series(
            &dirty,
            &SeriesSettings::new(&paired, at("abc", true)),
            &[kept(RunKind::AA, 1, "pass")],
        );
        let message = read_pool(&dirty, &now, &out, &[]).unwrap_err();
        assert!(message.contains("uncommitted changes"), "{message}");
        let message = read_pool(&dir.path().join("none"), &now, &out, &[]).unwrap_err();
        assert!(message.contains(SERIES_FILE), "{message}");
        let empty = dir.path().join("empty");
        kept_series(&empty, &SeriesSettings::new(&paired, at("abc", false)), &[]);
        let message = read_pool(&empty, &now, &out, &[]).unwrap_err();
        assert!(message.contains("no A/A run"), "{message}");
    }

    #[test]
    fn pooling_needs_paired_mode_and_may_replace_new_runs() {
        let stored = QualifyOpts {
            pool: vec![PathBuf::from("earlier")],
            ..opts()
        };
        let message = check_usage(
            &stored,
            &TargetSource::Bin {
                name: "demo-service".to_owned(),
            },
        )
        .unwrap_err();
        assert!(
            message.contains("--pool") && message.contains("hint: "),
            "{message}"
        );
        let report_only = QualifyOpts {
            paired: true,
            save: false,
            aa_runs: Some(0),
            inject: Vec::new(),
            ..stored
        };
        assert!(
            check_usage(
                &report_only,
                &TargetSource::Bin {
                    name: "demo-service".to_owned(),
                }
            )
            .is_ok()
        );
    }

    #[test]
    fn no_aa_runs_and_no_knob_is_nothing_to_run() {
        let nothing = QualifyOpts {
            aa_runs: Some(0),
            inject: Vec::new(),
            ..opts()
        };
        let message = check_usage(
            &nothing,
            &TargetSource::Bin {
                name: "demo-service".to_owned(),
            },
        )
        .unwrap_err();
        assert!(message.contains("nothing to run"), "{message}");
        // With a knob, the injected series alone is a series.
        let knob_only = QualifyOpts {
            aa_runs: Some(0),
            ..opts()
        };
        check_usage(
            &knob_only,
            &TargetSource::Bin {
                name: "demo-service".to_owned(),
            },
        )
        .unwrap();
        // A knob with --runs 0 and no A/A run makes nothing either.
        let no_runs = QualifyOpts {
            aa_runs: None,
            runs: 0,
            ..opts()
        };
        let message = check_usage(
            &no_runs,
            &TargetSource::Bin {
                name: "demo-service".to_owned(),
            },
        )
        .unwrap_err();
        assert!(message.contains("nothing to run"), "{message}");
    }

    #[test]
    fn paired_children_boot_the_head_twice_and_only_injected_heads_get_the_knob() {
        let opts = QualifyOpts {
            paired: true,
            save: false,
            ..opts()
        };
        let child = ChildRun {
            exe: Path::new("cargo-loadgate"),
            opts: &opts,
            mode: ChildMode::Paired,
            cwd: Path::new("/"),
            resume: false,
        };
        let aa = child.args(RunKind::AA, Path::new("/q/aa-01")).join(" ");
        assert_eq!(
            aa,
            "loadgate run --package demo-service --profile ci --target process --env RUST_LOG=warn \
             --out-dir /q/aa-01 --mode paired --base-same-as-head"
        );
        let injected = child
            .args(RunKind::Injected, Path::new("/q/injected-01"))
            .join(" ");
        assert_eq!(
            injected,
            "loadgate run --package demo-service --profile ci --target process --env RUST_LOG=warn \
             --head-env DEMO_CPU_US=3000 --out-dir /q/injected-01 --mode paired --base-same-as-head"
        );
        let aa = parsed(&child, RunKind::AA);
        assert_eq!(aa.mode, Some(crate::cli::ComparisonModeArg::Paired));
        assert!(aa.base_same_as_head && aa.head_env.is_empty());
        assert!(!aa.save_baseline && !aa.require_baseline);
        let injected = parsed(&child, RunKind::Injected);
        assert!(injected.base_same_as_head);
        assert_eq!(
            injected.head_env,
            vec![("DEMO_CPU_US".to_owned(), "3000".to_owned())]
        );
        // The knob never reaches the base: the shared environment is the user's `--env` alone.
        assert_eq!(
            injected.env,
            vec![("RUST_LOG".to_owned(), "warn".to_owned())]
        );
    }

    #[test]
    fn paired_qualification_refuses_save_and_url_targets() {
        let bin = TargetSource::Bin {
            name: "demo-service".to_owned(),
        };
        let url = TargetSource::Url {
            url: "http://127.0.0.1:8080".to_owned(),
        };
        // Stored mode keeps --save, and any target.
        assert_eq!(check_usage(&opts(), &url), Ok(()));
        let paired = QualifyOpts {
            paired: true,
            save: false,
            ..opts()
        };
        assert_eq!(check_usage(&paired, &bin), Ok(()));
        let save = QualifyOpts {
            save: true,
            ..paired
        };
        let err = check_usage(&save, &bin).unwrap_err();
        insta::assert_snapshot!(err, @r"
        --save stores the baseline run, and `qualify --paired` makes none (each paired run boots its own base)
        hint: drop --save, or run `cargo loadgate qualify --save` without --paired to keep A/A runs as a stored baseline's noise samples
        ");
        let paired = QualifyOpts {
            paired: true,
            save: false,
            target: None,
            ..opts()
        };
        let err = check_usage(&paired, &url).unwrap_err();
        assert!(
            err.contains("url target") && err.contains("\nhint: "),
            "{err}"
        );
        let url_flag = QualifyOpts {
            target: Some(crate::cli::TargetKindArg::Url),
            ..paired
        };
        assert!(check_usage(&url_flag, &bin).is_err());
    }

    fn paired_run(
        kind: RunKind,
        outcome: &str,
        capacity: Option<MetricOutcome>,
        detectable: Option<(f64, f64)>,
    ) -> QualifyRun {
        QualifyRun {
            capacity,
            detectable_p50: detectable.map(|d| d.0),
            detectable_p99: detectable.map(|d| d.1),
            ..run(kind, Some(outcome))
        }
    }

    #[test]
    fn paired_rates_pass_rate_capacity_and_detectable_medians() {
        use MetricOutcome::{Inconclusive, Pass, Regression};
        let runs = vec![
            paired_run(RunKind::AA, "pass", Some(Pass), Some((0.06, 0.15))),
            paired_run(RunKind::AA, "pass", Some(Pass), Some((0.09, 0.30))),
            paired_run(
                RunKind::AA,
                "inconclusive",
                Some(Inconclusive),
                Some((0.12, 0.18)),
            ),
            paired_run(RunKind::AA, "pass", None, Some((0.08, f64::NAN))),
            // A run without a verdict counts against the pass rate, not in the medians.
            QualifyRun {
                exit_code: Some(20),
                valid: None,
                ..run(RunKind::AA, None)
            },
            paired_run(
                RunKind::Injected,
                "regression",
                Some(Regression),
                Some((0.5, 0.5)),
            ),
            paired_run(RunKind::Injected, "regression", Some(Pass), None),
            paired_run(RunKind::Injected, "pass", None, None),
        ];
        let inject = vec![("DEMO_CPU_US".to_owned(), "3000".to_owned())];
        let report = QualifyReport::new(MeasurementMode::Paired, &inject, runs);
        assert_eq!((report.aa_pass_rate.hits, report.aa_pass_rate.of), (3, 5));
        let capacity = report.capacity.unwrap();
        let aa = capacity.false_regression_rate;
        assert_eq!((aa.hits, aa.of), (0, 3));
        let detected = capacity.detection_rate.unwrap();
        assert_eq!((detected.hits, detected.of), (1, 2));
        let detectable = report.detectable.unwrap();
        // The A/A runs only: p50 of 6, 9, 12, 8% is 8.5%; p99 of 15, 30, 18% (NaN left out) is 18%.
        let close = |d: DetectableMedian, median: f64, of: u32| {
            d.of == of && d.median.is_some_and(|m| (m - median).abs() < 1e-12)
        };
        assert!(close(detectable.p50, 0.085, 4), "{detectable:?}");
        assert!(close(detectable.p99, 0.18, 3), "{detectable:?}");
        assert_eq!(
            report.goals,
            Some(PairedGoals {
                no_false_regression: true,
                aa_pass_rate: false,
                detectable_p50: true,
                detectable_p99: true,
            })
        );
        insta::assert_snapshot!(report.render(), @r"
        paired runs: the head's build booted twice (--base-same-as-head)
        A/A runs: 3 pass, 0 regression, 1 inconclusive, 1 without a verdict
        false-regression rate: 0/4 = 0% (95% interval 0%–49%); goal none: met
        A/A pass rate: 3/5 = 60% (95% interval 23%–88%); goal at least 90%: missed
        runs with DEMO_CPU_US=3000 on the head: 1 pass, 2 regression, 0 inconclusive, 0 without a verdict
        detection rate: 2/3 = 67% (95% interval 21%–94%)
        capacity regressions: A/A 0/3 = 0% (95% interval 0%–56%); with DEMO_CPU_US=3000 on the head 1/2 = 50% (95% interval 9%–91%)
        smallest detectable change, median of the A/A runs: p50 8.5% (goal at most 10%: met) over 4 run(s), p99 18.0% (goal at most 20%: met) over 3 run(s)
        ");
        // The JSON report is a contract: its figures, rounded, and the first run's fields.
        let mut json = serde_json::to_value(&report).unwrap();
        json["runs"] = serde_json::Value::Array(json["runs"].as_array().unwrap()[..1].to_vec());
        round_floats(&mut json);
        insta::assert_json_snapshot!(json, @r#"
        {
          "aa": {
            "inconclusive": 1,
            "no_verdict": 1,
            "pass": 3,
            "regression": 0,
            "unreadable": 0
          },
          "aa_pass_rate": {
            "estimate": 0.6,
            "high": 0.8824,
            "hits": 3,
            "low": 0.2307,
            "of": 5
          },
          "capacity": {
            "detection_rate": {
              "estimate": 0.5,
              "high": 0.9055,
              "hits": 1,
              "low": 0.0945,
              "of": 2
            },
            "false_regression_rate": {
              "estimate": 0.0,
              "high": 0.5615,
              "hits": 0,
              "low": 0.0,
              "of": 3
            }
          },
          "detectable": {
            "p50": {
              "median": 0.085,
              "of": 4
            },
            "p99": {
              "median": 0.18,
              "of": 3
            }
          },
          "detection_rate": {
            "estimate": 0.6667,
            "high": 0.9385,
            "hits": 2,
            "low": 0.2077,
            "of": 3
          },
          "false_regression_rate": {
            "estimate": 0.0,
            "high": 0.4899,
            "hits": 0,
            "low": 0.0,
            "of": 4
          },
          "format_version": 1,
          "goals": {
            "aa_pass_rate": false,
            "detectable_p50": true,
            "detectable_p99": true,
            "no_false_regression": true
          },
          "inject": [
            "DEMO_CPU_US=3000"
          ],
          "injected": {
            "inconclusive": 0,
            "no_verdict": 0,
            "pass": 1,
            "regression": 2,
            "unreadable": 0
          },
          "mode": "paired",
          "pools": [],
          "runs": [
            {
              "calibration_drift": null,
              "capacity": "pass",
              "detectable_p50": 0.06,
              "detectable_p99": 0.15,
              "exit_code": 0,
              "index": 1,
              "kind": "a-a",
              "outcome": "pass",
              "regressed": [],
              "result": "result.json",
              "rule_fired": null,
              "seconds": 1.0,
              "unreadable": null,
              "valid": true
            }
          ]
        }
        "#);
    }

    /// Rounds every non-integer number to four decimals, so a snapshot does not pin float noise.
    fn round_floats(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Number(n) if n.is_f64() => {
                let x = n.as_f64().unwrap_or_default();
                *value = serde_json::json!((x * 1e4).round() / 1e4);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(round_floats),
            serde_json::Value::Object(map) => map.values_mut().for_each(round_floats),
            _ => {}
        }
    }

    #[test]
    fn paired_goals_are_missed_without_figures_or_with_a_false_regression() {
        let runs = vec![
            run(RunKind::AA, Some("regression")),
            run(RunKind::AA, Some("pass")),
        ];
        let report = QualifyReport::new(MeasurementMode::Paired, &[], runs);
        assert!(report.capacity.is_none());
        let goals = report.goals.unwrap();
        assert!(!goals.no_false_regression && !goals.detectable_p50 && !goals.detectable_p99);
        let text = report.render();
        assert!(
            text.contains("p50 not reported (goal at most 10%: missed) over 0 run(s)"),
            "{text}"
        );
        // No A/A run at all is not a pass rate of 100%.
        let empty = QualifyReport::new(MeasurementMode::Paired, &[], Vec::new());
        assert!(!empty.goals.unwrap().aa_pass_rate);
    }

    #[test]
    fn overall_takes_the_metric_of_all_operations_together() {
        use crate::result::{Comparison, MetricComparison, Scale, Verdict};
        let metric = |metric, operation: Option<&str>, detectable| MetricComparison {
            metric,
            operation: operation.map(str::to_owned),
            primary: true,
            scale: Scale::Ratio,
            base: None,
            head: None,
            estimate: None,
            low: None,
            high: None,
            confidence: 0.95,
            threshold: 1.1,
            p_value: None,
            outcome: MetricOutcome::Pass,
            detectable,
            note: None,
            noise: None,
            accepted: None,
        };
        let mut result = crate::result::testing::before();
        assert!(overall(&result, Metric::P50).is_none());
        result.comparison = Some(Comparison {
            base_commit: None,
            head_commit: None,
            alpha: 0.05,
            metrics: vec![
                metric(Metric::P50, Some("transfer"), Some(0.3)),
                metric(Metric::P50, None, Some(0.07)),
                metric(Metric::P99, Some("login"), Some(0.4)),
            ],
            verdict: Verdict::no_baseline(Vec::new()),
            noise: None,
            headroom: None,
        });
        assert_eq!(
            overall(&result, Metric::P50).and_then(|m| m.detectable),
            Some(0.07)
        );
        assert!(overall(&result, Metric::P99).is_none());
    }

    #[test]
    fn regressed_metrics_name_the_operation() {
        use crate::result::{Comparison, Metric, MetricComparison, Scale, Verdict};
        let metric = |metric, operation: Option<&str>, outcome| MetricComparison {
            metric,
            operation: operation.map(str::to_owned),
            primary: true,
            scale: Scale::Ratio,
            base: None,
            head: None,
            estimate: None,
            low: None,
            high: None,
            confidence: 0.95,
            threshold: 1.1,
            p_value: None,
            outcome,
            detectable: None,
            note: None,
            noise: None,
            accepted: None,
        };
        let mut result = crate::result::testing::before();
        assert!(regressed_metrics(&result).is_empty());
        let verdict = Verdict::no_baseline(Vec::new());
        result.comparison = Some(Comparison {
            base_commit: None,
            head_commit: None,
            alpha: 0.05,
            metrics: vec![
                metric(Metric::P99, Some("transfer"), MetricOutcome::Regression),
                metric(Metric::P50, Some("transfer"), MetricOutcome::Pass),
                metric(Metric::Capacity, None, MetricOutcome::Regression),
                metric(Metric::ErrorRate, Some("login"), MetricOutcome::Regression),
            ],
            verdict,
            noise: None,
            headroom: None,
        });
        assert_eq!(
            regressed_metrics(&result),
            vec![
                "p99 transfer".to_owned(),
                "capacity".to_owned(),
                "error-rate login".to_owned()
            ]
        );
    }
}
