//! The comparison's part of the run document: each metric's estimate with its interval and
//! outcome, and the verdict. `compare/` decides them; this module only holds what is written and
//! read back, so that the document does not depend on the code that judges it.

use serde::{Deserialize, Serialize};

/// A compared metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Median latency from the intended send time, at the same offered load.
    P50,
    /// 99th percentile latency from the intended send time, at the same offered load.
    P99,
    /// The share of requests without a correct answer, at the same offered load.
    ErrorRate,
    /// The knee: the highest session rate that holds the SLO.
    Capacity,
    /// The growth of the target's RSS over the soak, in bytes per second.
    RssSlope,
}

impl Metric {
    /// The metric's name for people.
    pub fn label(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::ErrorRate => "error rate",
            Metric::Capacity => "capacity",
            Metric::RssSlope => "RSS slope",
        }
    }

    /// The metric's name as the result writes it: `p50`, `p99`, `error-rate`, `capacity`,
    /// `rss-slope`.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::ErrorRate => "error-rate",
            Metric::Capacity => "capacity",
            Metric::RssSlope => "rss-slope",
        }
    }
}

/// How a metric's estimate relates head to base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// head / base; 1 is no change.
    Ratio,
    /// head − base in the metric's unit; 0 is no change.
    Difference,
}

/// What the interval rule concluded for one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricOutcome {
    /// The whole interval lies beyond the threshold on the bad side.
    Regression,
    /// The whole interval lies within the threshold.
    Pass,
    /// The interval straddles the threshold, or the data did not allow a comparison.
    Inconclusive,
    /// The whole interval lies beyond the threshold on the good side (a pass, worth reporting).
    Improvement,
    /// An intended change (a `Loadgate-Accept` trailer or an `[[accept]]` entry of the config,
    /// [`MetricComparison::accepted`]): the interval lies within the accepted amount but not
    /// within the `[gate]` threshold. A pass.
    Accepted,
}

/// One metric of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Which metric.
    pub metric: Metric,
    /// The operation class; `None` for all operations together.
    pub operation: Option<String>,
    /// Whether the metric is in the Holm family (primary) or only warns (secondary).
    pub primary: bool,
    /// Whether `estimate`, `low`, `high` and `threshold` are ratios or differences.
    pub scale: Scale,
    /// The baseline's figure in the metric's unit (ms, a fraction, sessions/s, bytes/s).
    pub base: Option<f64>,
    /// This run's figure in the same unit.
    pub head: Option<f64>,
    /// The point estimate: head/base or head − base.
    pub estimate: Option<f64>,
    /// The lower end of the interval; `None` when unknown or unbounded.
    pub low: Option<f64>,
    /// The upper end of the interval; `None` when unknown or unbounded.
    pub high: Option<f64>,
    /// The two-sided confidence of the interval: 1 − 2 × its one-sided level, which is the Holm
    /// level for a regression found by Holm's procedure and α otherwise.
    pub confidence: f64,
    /// Where the bad side begins, on the estimate's scale: 1 + δ for latency, 1 − δ for capacity,
    /// δ for the error rate and the RSS slope.
    pub threshold: f64,
    /// The one-sided p-value of "no regression beyond the threshold", when there is one.
    pub p_value: Option<f64>,
    /// The conclusion.
    pub outcome: MetricOutcome,
    /// The smallest true change this run would call a regression with 80% power: a relative
    /// increase for latency (0.14 = 14%), a relative loss for capacity (the bracket's bound, with
    /// the run-to-run noise at that power in a stored comparison), an absolute increase for
    /// differences.
    pub detectable: Option<f64>,
    /// Why the metric could not be judged, or what limited it.
    pub note: Option<String>,
    /// The run-to-run noise the interval accounts for, in a comparison with a stored baseline;
    /// absent in comparisons of two given results (and in results written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<MetricNoise>,
    /// The intended change this metric was judged against, when one applies to it: its amount
    /// replaced the `[gate]` threshold in `threshold`; absent otherwise (and in results written
    /// before accepts existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<AcceptedChange>,
}

/// An intended change applied to one metric (`compare::accept`): where it was written and what
/// it replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AcceptedChange {
    /// Every accept that applies to the metric, as written: `Loadgate-Accept: p50 +30%` with
    /// its commit, or the config's `[[accept]]` entry with its file and line. Several of one
    /// metric add up (their ratios multiply).
    pub sources: Vec<String>,
    /// The reasons given with them (`Loadgate-Reason:` or the entry's `reason`).
    pub reasons: Vec<String>,
    /// Whether an `all` accept applies: any change of the metric is accepted, and `threshold`
    /// stays the `[gate]` one.
    pub all: bool,
    /// The `[gate]` threshold the accepted amount replaced, on the estimate's scale (as
    /// [`MetricComparison::threshold`]).
    pub gate_threshold: f64,
}

/// Where a stored comparison's run-to-run noise figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseSource {
    /// The stored results of the base's first-parent ancestors with the same config and
    /// environment.
    History,
    /// The A/A runs `qualify --save` kept with the baseline.
    Qualify,
    /// Both, pooled.
    HistoryAndQualify,
    /// Fewer than three runs: the conservative default (`compare::DEFAULT_RUN_NOISE`).
    Default,
}

impl NoiseSource {
    /// The source for people: `stored history`, `qualify runs`, `the default`.
    pub fn word(self) -> &'static str {
        match self {
            Self::History => "stored history",
            Self::Qualify => "qualify A/A runs",
            Self::HistoryAndQualify => "stored history and qualify A/A runs",
            Self::Default => "the conservative default",
        }
    }
}

/// The run-to-run noise one metric's interval accounts for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricNoise {
    /// Where it came from.
    pub source: NoiseSource,
    /// How many stored runs it rests on (0 for the default).
    pub runs: u32,
    /// The standard deviation between runs, beyond each run's own sampling error, on the test
    /// scale (ln for ratios, the difference for the error rate); the interval adds it for both
    /// sides.
    pub run_sd: f64,
    /// The degrees of freedom of the interval's t quantile; absent for the normal (the default).
    pub df: Option<f64>,
    /// Stored runs left out because they lie beyond a change point of this metric's history.
    pub excluded: u32,
}

/// The stored ancestor results passed over while collecting the noise history, by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedAncestors {
    /// Stored with a different config hash (or schedule).
    pub different_config: u32,
    /// Stored in a different environment (fingerprint).
    pub different_environment: u32,
    /// Not readable by this version (a newer format, a broken shape).
    pub unreadable: u32,
}

impl SkippedAncestors {
    /// How many were skipped in all.
    pub fn total(&self) -> u32 {
        self.different_config + self.different_environment + self.unreadable
    }
}

/// Where a stored comparison's noise figures came from, for the whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseSummary {
    /// The source of the figures (each metric's own is in [`MetricComparison::noise`]).
    pub source: NoiseSource,
    /// Stored results of the base's first-parent ancestors used, the baseline included.
    pub history_runs: u32,
    /// A/A runs kept with the baseline by `qualify --save`.
    pub qualify_runs: u32,
    /// The ancestors passed over, and why.
    pub skipped: SkippedAncestors,
}

impl NoiseSummary {
    /// One line for people: where the noise figure came from, what it rests on, what was skipped.
    pub fn describe(&self) -> String {
        let mut line = match self.source {
            NoiseSource::Default => format!(
                "run-to-run noise: the conservative default ({} stored run(s) of this config and \
                 machine, {} qualify run(s): fewer than 3)",
                self.history_runs, self.qualify_runs
            ),
            source => format!(
                "run-to-run noise: from {} ({} stored run(s), {} qualify run(s); the default \
                 weighs as one more)",
                source.word(),
                self.history_runs,
                self.qualify_runs
            ),
        };
        let s = &self.skipped;
        if s.total() > 0 {
            let mut why = Vec::new();
            for (n, reason) in [
                (s.different_config, "different config"),
                (s.different_environment, "different environment"),
                (s.unreadable, "unreadable"),
            ] {
                if n > 0 {
                    why.push(format!("{n} {reason}"));
                }
            }
            line.push_str(&format!(
                "; {} ancestor result(s) skipped: {}",
                s.total(),
                why.join(", ")
            ));
        }
        line
    }
}

/// The gate's conclusion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictOutcome {
    /// No metric regressed and every primary metric passed.
    Pass,
    /// A metric regressed.
    Regression,
    /// The run cannot tell: a straddling interval, an invalid phase, a different machine.
    Inconclusive,
    /// No baseline was found to compare with.
    NoBaseline,
}

impl VerdictOutcome {
    /// The outcome as the result writes it: `pass`, `regression`, `inconclusive`, `no-baseline`.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictOutcome::Pass => "pass",
            VerdictOutcome::Regression => "regression",
            VerdictOutcome::Inconclusive => "inconclusive",
            VerdictOutcome::NoBaseline => "no-baseline",
        }
    }

    /// The outcome's word for people: `pass`, `regression`, `inconclusive`, `no baseline`. The
    /// terminal's verdict line writes it in capitals, the Markdown after its [`icon`](Self::icon).
    pub fn word(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Regression => "regression",
            Self::Inconclusive => "inconclusive",
            Self::NoBaseline => "no baseline",
        }
    }

    /// The icon the Markdown shows before the word.
    pub fn icon(self) -> &'static str {
        match self {
            Self::Pass => "✅",
            Self::Regression => "❌",
            Self::Inconclusive => "⚠️",
            Self::NoBaseline => "ℹ️",
        }
    }
}

impl MetricOutcome {
    /// The metric's outcome for people: `regression`, `pass`, `inconclusive`, `improvement`,
    /// `accepted`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::Pass => "pass",
            Self::Inconclusive => "inconclusive",
            Self::Improvement => "improvement",
            Self::Accepted => "accepted",
        }
    }

    /// Whether the outcome lets the run pass: a pass, an improvement or an accepted change.
    pub fn passes(self) -> bool {
        matches!(self, Self::Pass | Self::Improvement | Self::Accepted)
    }
}

/// The verdict: the outcome, the rule that fired and the numbers behind it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The outcome.
    pub outcome: VerdictOutcome,
    /// The rule that decided it, with its numbers, for people.
    pub rule_fired: String,
    /// Indices into [`Comparison::metrics`] of the metrics behind the rule.
    pub metrics: Vec<usize>,
    /// What a person should know that did not decide the outcome.
    pub warnings: Vec<String>,
    /// The leak rule's finding about this run, and whether the verdict counts it; absent when
    /// there was none (and in results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak: Option<LeakFinding>,
}

/// The leak rule's finding (`compare::leak_finding`): this run's RSS slope lies wholly above
/// `gate.rss-slope`. It fails the gate only when, against a baseline, the difference head − base
/// regressed too (the comparison's RSS slope metric is behind a regression verdict); every
/// reporter reads that here instead of deciding it again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakFinding {
    /// The finding for people, as `soak.leak` has it.
    pub message: String,
    /// Whether the verdict is a regression because of it.
    pub regression: bool,
    /// Why it does or does not fail the gate, for people.
    pub reason: String,
}

impl LeakFinding {
    /// The finding as the terminal and the Markdown summary state it, with the verdict's
    /// decision: `(true, message)` when the verdict counts it, else `(false, "message (reason)")`.
    /// Reporters show this instead of `soak.leak` so that they say what JUnit and the verdict say.
    pub fn statement(&self) -> (bool, String) {
        if self.regression {
            (true, self.message.clone())
        } else {
            (false, format!("{} ({})", self.message, self.reason))
        }
    }
}

/// The leak finding of `verdict` as [`LeakFinding::statement`] gives it, else `soak_leak` (the
/// soak's own finding, in results written before the verdict recorded it) as counted.
pub fn leak_statement(
    verdict: Option<&Verdict>,
    soak_leak: Option<&str>,
) -> Option<(bool, String)> {
    match verdict.and_then(|v| v.leak.as_ref()) {
        Some(finding) => Some(finding.statement()),
        None => soak_leak.map(|l| (true, l.to_owned())),
    }
}

impl Verdict {
    /// The verdict when no baseline was found; `explanations` say why each candidate was skipped.
    pub fn no_baseline(explanations: Vec<String>) -> Self {
        Self {
            outcome: VerdictOutcome::NoBaseline,
            rule_fired: "no baseline matches this run".to_owned(),
            metrics: Vec::new(),
            warnings: explanations,
            leak: None,
        }
    }
}

/// A run compared with its baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's commit.
    pub base_commit: Option<String>,
    /// This run's commit.
    pub head_commit: Option<String>,
    /// The family-wise α of the primary metrics.
    pub alpha: f64,
    /// Every metric, primary ones first.
    pub metrics: Vec<MetricComparison>,
    /// The verdict.
    pub verdict: Verdict,
    /// Where the run-to-run noise of a comparison with a stored baseline came from; absent in
    /// comparisons of two given results (and in results written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseSummary>,
    /// This run's headroom against the baseline's, when both have one (`compare::headroom`);
    /// absent otherwise (and in results written before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom: Option<super::HeadroomComparison>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the terminal and the Markdown printed "LEAK" from the soak's finding while the
    /// verdict passed it (a leak shared with the base) and JUnit skipped it.
    #[test]
    fn the_leak_is_stated_as_the_verdict_decided_it() {
        let mut verdict = Verdict::no_baseline(Vec::new());
        assert_eq!(leak_statement(Some(&verdict), None), None);
        assert_eq!(
            leak_statement(None, Some("RSS grows")),
            Some((true, "RSS grows".to_owned()))
        );
        verdict.leak = Some(LeakFinding {
            message: "RSS grows".into(),
            regression: false,
            reason: "the base grows as fast".into(),
        });
        assert_eq!(
            leak_statement(Some(&verdict), Some("RSS grows")),
            Some((false, "RSS grows (the base grows as fast)".to_owned()))
        );
        verdict.leak.as_mut().unwrap().regression = true;
        assert_eq!(
            leak_statement(Some(&verdict), Some("RSS grows")),
            Some((true, "RSS grows".to_owned()))
        );
    }

    #[test]
    fn names_are_the_written_ones() {
        use Metric::*;
        for metric in [P50, P99, ErrorRate, Capacity, RssSlope] {
            assert_eq!(serde_json::to_value(metric).unwrap(), metric.as_str());
        }
        use VerdictOutcome::*;
        for outcome in [Pass, Regression, Inconclusive, NoBaseline] {
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.as_str());
        }
    }
}

/// One `[[probe]] limits` entry, judged: a gauge's largest sample or a counter's increase over the
/// run against the highest allowed value. A probe that could not be sampled fails its checks (it
/// cannot pass), with the reason.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeCheck {
    /// The probe's name.
    pub probe: String,
    /// The series limited.
    pub series: String,
    /// The highest allowed value.
    pub limit: f64,
    /// What was measured (a gauge's largest sample, a counter's increase); absent when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Whether it held.
    pub passed: bool,
    /// The check for people, e.g. "db.deadlocks rose by 3 during the run (limit 0)".
    pub message: String,
}
