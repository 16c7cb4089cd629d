//! The Markdown summary for `$GITHUB_STEP_SUMMARY` and pull-request comments. It leads with the
//! decision (seed 002): the verdict line, then the checks, the ramp's sentence, the headroom and
//! its check, the soak's slopes, the generator's health, and where and what was measured. Formatting only: every number comes
//! from the result and the comparison.

use super::table::{Cell, Table};
use crate::compare::{accepted_phrase, format_change, format_threshold, metric_name};
use crate::config::{format_factor, format_millis};
use crate::plan::pairing::Side;
use crate::plan::{SoakOutcome, format_latency, format_rate};
use crate::result::{HeadroomOutcome, MeasurementMode, PairedRecord, RunResult};
use crate::result::{Metric, MetricComparison, MetricOutcome, Verdict, VerdictOutcome};
use std::fmt::Write as _;
use std::time::Duration;

/// The icon and word of a verdict's outcome; `None` is a run without one.
pub(crate) fn verdict_badge(outcome: Option<VerdictOutcome>) -> (&'static str, &'static str) {
    outcome.map_or(("⏳", "no verdict"), |o| (o.icon(), o.word()))
}

/// `[data]` as it ran, in one sentence: the tier, the seed, and each step with its time, its
/// output's digest (shortened) and its last line.
pub fn data_sentence(data: &crate::targets::DataRecord) -> String {
    let tier = data
        .tier
        .as_ref()
        .map(|t| format!("tier `{t}`, "))
        .unwrap_or_default();
    let steps: Vec<String> = data
        .steps
        .iter()
        .map(|s| {
            format!(
                "`{}` {:.1} s (output sha256 {}{})",
                s.name,
                s.seconds,
                &s.output_sha256[..12.min(s.output_sha256.len())],
                s.output
                    .last()
                    .map(|l| format!(": {l}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    format!(
        "{tier}seed {}; {}",
        data.seed,
        if steps.is_empty() {
            "no step".to_owned()
        } else {
            steps.join(", ")
        }
    )
}

/// Renders the summary of a run.
pub fn markdown_summary(result: &RunResult) -> String {
    let mut md = String::new();
    let outcome = result.verdict.as_ref().map(|v| v.outcome);
    let (icon, word) = verdict_badge(outcome);
    let unfinished = if outcome.is_none() {
        " (the run did not finish)"
    } else {
        ""
    };
    let _ = writeln!(md, "## {icon} cargo-loadgate: {word}{unfinished}\n");
    if let Some(verdict) = &result.verdict {
        let _ = writeln!(md, "{}\n", escape(&verdict.rule_fired));
    }
    if result.mode == MeasurementMode::Paired {
        paired_header(&mut md, result.paired.as_ref());
    }
    let unkept: Vec<String> = result
        .phases
        .iter()
        .map(|p| &p.measurement)
        .filter(|m| !m.validity.is_valid())
        .filter(|m| !result.ramp.as_ref().is_some_and(|r| r.excuses(&m.name)))
        .map(|m| format!("`{}`", m.name))
        .collect();
    if !unkept.is_empty() {
        let _ = writeln!(
            md,
            "**Not kept:** the generator could not keep its schedule in {}: the metrics measured \
             there are inconclusive, never a pass.\n",
            unkept.join(", ")
        );
    }
    if let Some(comparison) = &result.comparison {
        let figure = |m: &MetricComparison, value: Option<f64>| {
            value.map_or_else(|| "–".to_owned(), |v| format_figure(m, v))
        };
        let checks = Table::new(&[
            "check",
            "base",
            "head",
            "change",
            "interval",
            "threshold",
            "outcome",
        ])
        .left(&[4, 6])
        .tight_rule()
        .rows(comparison.metrics.iter().map(|m| {
            let outcome = match (m.outcome, &m.accepted) {
                (MetricOutcome::Regression, _) => {
                    format!("{} {}", VerdictOutcome::Regression.icon(), m.outcome.word())
                }
                // The amount an intended change was accepted up to, or `all`.
                (MetricOutcome::Accepted, Some(a)) if a.all => "accepted (all)".to_owned(),
                (MetricOutcome::Accepted, _) => format!("accepted ({})", format_threshold(m)),
                (other, _) => other.word().to_owned(),
            };
            [
                metric_name(m),
                figure(m, m.base),
                figure(m, m.head),
                format_change(m, m.estimate),
                format!("{} … {}", format_change(m, m.low), format_change(m, m.high)),
                format_threshold(m),
                outcome,
            ]
        }));
        md.push_str(&checks.markdown());
        md.push('\n');
        for m in comparison
            .metrics
            .iter()
            .filter(|m| m.outcome == MetricOutcome::Accepted)
        {
            let Some(a) = &m.accepted else { continue };
            let _ = writeln!(
                md,
                "**Accepted:** {}: {}{}\n",
                escape(&accepted_phrase(m)),
                escape(&a.sources.join("; ")),
                if a.reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", escape(&a.reasons.join("; ")))
                }
            );
        }
        if let Some(noise) = &comparison.noise {
            let _ = writeln!(md, "{}\n", escape(&noise.describe()));
        }
        if let Some(h) = &comparison.headroom {
            let _ = writeln!(
                md,
                "**Headroom against the baseline:** {}: {}\n",
                h.outcome.word(),
                escape(&h.note)
            );
        }
    }
    if let Some(record) = &result.paired {
        pairs_section(&mut md, record);
    }
    if let Some(ramp) = &result.ramp {
        let _ = writeln!(md, "**Ramp:** {}\n", escape(&ramp.sentence));
        if !ramp.failing_from_first_step.is_empty() {
            let _ = writeln!(
                md,
                "**Failing from the first step** (a bug, not a capacity limit): {}\n",
                escape(&ramp.failing_from_first_step.join("; "))
            );
        }
    }
    if let Some(h) = &result.headroom {
        let _ = writeln!(md, "**Headroom:** {}\n", escape(&h.statement));
        if let (Some(outcome), Some(limit), Some(reason)) = (h.outcome, h.limit, &h.reason) {
            let icon = match outcome {
                HeadroomOutcome::Pass => VerdictOutcome::Pass.icon(),
                HeadroomOutcome::Fail => VerdictOutcome::Regression.icon(),
                HeadroomOutcome::Inconclusive => VerdictOutcome::Inconclusive.icon(),
            };
            let _ = writeln!(
                md,
                "**Headroom check** (`slo.headroom` {}): {icon} {}: {}\n",
                format_factor(limit),
                outcome.word(),
                escape(reason)
            );
        }
    }
    for audit in &result.audits {
        let icon = if audit.passed() {
            VerdictOutcome::Pass.icon()
        } else {
            VerdictOutcome::Regression.icon()
        };
        let _ = writeln!(md, "**Audit:** {icon} {}\n", escape(&audit.statement()));
    }
    for line in crate::result::retry_statements(result) {
        let _ = writeln!(md, "**Retries:** {}\n", escape(&line));
    }
    if let Some(spike) = &result.spike {
        let _ = writeln!(
            md,
            "**Spike:** {}\n",
            escape(&crate::report::spike_sentence(spike))
        );
        if let Some(line) = crate::report::recovery_check_line(spike) {
            let _ = writeln!(md, "**{}**\n", escape(&line));
        }
        if let Some(phase) = result
            .phases
            .iter()
            .find(|p| p.measurement.name == spike.phase)
        {
            let burst = Table::new(&["second", "sent", "errors", "p99", "phase"]).rows(
                crate::report::burst_rows(spike, &phase.measurement.windows.windows),
            );
            let _ = writeln!(
                md,
                "<details><summary>The spike second by second</summary>\n\n{}\n</details>\n",
                burst.markdown()
            );
        }
    } else if let Some(reason) = &result.spike_skipped {
        let _ = writeln!(md, "**Spike:** skipped: {}\n", escape(reason));
    }
    if let Some(stress) = &result.stress {
        let icon = match stress.harm {
            crate::plan::Harm::Recovered => VerdictOutcome::Pass.icon(),
            crate::plan::Harm::LastingHarm => VerdictOutcome::Regression.icon(),
            crate::plan::Harm::Inconclusive => VerdictOutcome::Inconclusive.icon(),
        };
        let _ = writeln!(
            md,
            "**Stress:** {icon} {}\n",
            escape(&crate::report::stress_sentence(stress))
        );
        let table = Table::new(&[
            "metric",
            "before",
            "after",
            "change",
            "interval",
            "threshold",
            "outcome",
        ])
        .rows(crate::report::stress_rows(stress));
        let _ = writeln!(md, "{}\n", table.markdown());
        if let Some(check) = &stress.check {
            let _ = writeln!(md, "**{}**\n", escape(&crate::report::check_line(check)));
        }
    } else if let Some(reason) = &result.stress_skipped {
        let _ = writeln!(md, "**Stress:** skipped: {}\n", escape(reason));
    }
    if let Some(soak) = &result.soak {
        soak_section(&mut md, soak, result.verdict.as_ref());
    } else if let Some(reason) = &result.soak_skipped {
        let _ = writeln!(md, "**Soak:** skipped: {}\n", escape(reason));
    }
    if let Some(data) = &result.data {
        let _ = writeln!(md, "**Data:** {}\n", escape(&data_sentence(data)));
    }
    let probes = super::probes::probe_markdown(result);
    if !probes.is_empty() {
        md.push_str(probes.trim_start_matches('\n'));
        md.push('\n');
    }
    let stubs = super::stubs::stub_markdown(result);
    if !stubs.is_empty() {
        md.push_str(stubs.trim_start_matches('\n'));
        md.push('\n');
    }
    let replicas = super::replicas::replica_markdown(result);
    if !replicas.is_empty() {
        md.push_str(replicas.trim_start_matches('\n'));
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "<details><summary>Generator health, environment, commits</summary>\n"
    );
    let health = Table::new(&[
        "phase",
        "offered sessions/s",
        "requests",
        "lag p99 ms",
        "dropped",
        "valid",
    ])
    .left(&[5])
    .tight_rule()
    .rows(result.phases.iter().map(|phase| {
        let s = phase.measurement.summary();
        [
            Cell::text(&s.name),
            Cell::text(format!("{:.1}", phase.measurement.sessions_per_sec)),
            Cell::text(s.total.requests.to_string()),
            Cell::text(format_millis(s.lag_p99)),
            Cell::text(s.dropped.to_string()),
            if s.valid {
                Cell::text("yes")
            } else {
                Cell::strong("no")
            },
        ]
    }));
    md.push_str(&health.markdown());
    md.push('\n');
    let env = &result.environment;
    let _ = writeln!(
        md,
        "- machine: {} ({} cores), kernel {}{}",
        escape(&env.cpu_model),
        env.cores,
        escape(&env.kernel),
        env.engine_version
            .as_ref()
            .map(|v| format!(", Docker engine {v}"))
            .unwrap_or_default()
    );
    if let Some(git) = &result.git {
        let _ = writeln!(
            md,
            "- head: `{}`{}",
            &git.commit[..git.commit.len().min(12)],
            if git.dirty { " (dirty)" } else { "" }
        );
    }
    if let Some(base) = &result.baseline {
        let _ = writeln!(
            md,
            "- baseline: `{}` ({} step(s) from the merge-base, {})",
            &base.commit[..base.commit.len().min(12)],
            base.distance,
            escape(&base.store)
        );
    }
    let seed = result.phases.first().map(|p| p.measurement.seed);
    let _ = writeln!(
        md,
        "- profile `{}`, config `{}`{}, cargo-loadgate {}",
        escape(&result.profile),
        &result.config_hash[..result.config_hash.len().min(12)],
        seed.map(|s| format!(", seed {s}")).unwrap_or_default(),
        escape(&result.tool.version)
    );
    md.push_str("\n</details>\n");
    md
}

/// A base or head figure in the metric's own unit: a latency in ms or s, the error rate in
/// percent, the knee bracket's midpoint in sessions/s, the RSS slope in MiB/min as its change is.
fn format_figure(m: &MetricComparison, value: f64) -> String {
    match m.metric {
        Metric::P50 | Metric::P99 => format_latency(Duration::from_secs_f64(value.max(0.0) / 1e3)),
        Metric::ErrorRate => format!("{:.2}%", value * 100.0),
        Metric::Capacity => format!("{} sessions/s", format_rate(value)),
        Metric::RssSlope => format!("{:.2} MiB/min", value * 60.0 / (1024.0 * 1024.0)),
    }
}

/// The paired run's line under the verdict: how it was decided, and what was compared.
fn paired_header(md: &mut String, record: Option<&PairedRecord>) {
    let Some(record) = record else {
        let _ = writeln!(
            md,
            "**Paired:** decided by paired blocks; none were recorded.\n"
        );
        return;
    };
    let _ = writeln!(
        md,
        "**Paired:** {}. Compared: {}.\n",
        escape(&record.describe()),
        escape(&record.base.statement)
    );
    if let Some(note) = &record.design.capacity_note {
        let _ = writeln!(
            md,
            "The base's capacity: {} sessions/s ({}).\n",
            format_rate(record.design.base_capacity_sessions_per_sec),
            escape(note)
        );
    }
}

/// The per-pair table: each pair's head / base ratios and error-rate difference, and whether the
/// comparison uses it (the checks above are estimated from the pairs it uses).
fn pairs_section(md: &mut String, record: &PairedRecord) {
    if record.pairs.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "**Pairs** (head / base; the checks' changes are the Hodges–Lehmann estimates over the \
         pairs used):\n"
    );
    let ratio = |r: Option<f64>| {
        r.map_or_else(
            || "–".to_owned(),
            |r| format!("{r:.3} ({:+.1}%)", (r - 1.0) * 100.0),
        )
    };
    let pairs = Table::new(&[
        "pair",
        "first",
        "p50 ratio",
        "p99 ratio",
        "error-rate difference",
        "used",
    ])
    .left(&[1, 5])
    .tight_rule()
    .rows(record.pairs.iter().map(|p| {
        [
            Cell::text(p.pair.to_string()),
            Cell::text(match p.first {
                Side::Base => "base (A)",
                Side::Head => "head (B)",
            }),
            Cell::text(ratio(p.p50_ratio)),
            Cell::text(ratio(p.p99_ratio)),
            Cell::text(
                p.error_rate_difference
                    .map_or_else(|| "–".to_owned(), |d| format!("{:+.2} pp", d * 100.0)),
            ),
            match (&p.excluded, p.used) {
                (_, true) => Cell::text("yes"),
                (Some(why), false) => Cell::strong("no").then(Cell::text(format!(": {why}"))),
                (None, false) => Cell::strong("no"),
            },
        ]
    }));
    md.push_str(&pairs.markdown());
    md.push('\n');
}

fn soak_section(md: &mut String, soak: &SoakOutcome, verdict: Option<&Verdict>) {
    let _ = writeln!(
        md,
        "**Soak:** {:.1} req/s offered for {} windows; slopes with 95% intervals:\n",
        soak.offered_rate_per_sec, soak.windows
    );
    if let Some(lowered) = &soak.lowered {
        let _ = writeln!(md, "The soak's load was {}.\n", escape(lowered));
    }
    for (name, value, f) in soak.slopes.named() {
        md.push_str(&match value {
            Some(v) => format!(
                "- {name}: {} per s ({} … {})\n",
                f(v.estimate),
                f(v.low),
                f(v.high)
            ),
            None => format!("- {name}: too few points\n"),
        });
    }
    match crate::result::leak_statement(verdict, soak.leak.as_deref()) {
        Some((true, leak)) => {
            let _ = writeln!(md, "\n**Leak:** {}", escape(&leak));
        }
        Some((false, leak)) => {
            let _ = writeln!(md, "\n**Leak, not counted:** {}", escape(&leak));
        }
        None => {}
    }
    md.push('\n');
}

/// Escapes text for a Markdown paragraph, heading or list item, so that it shows as written and
/// cannot start markup: `\\`, `*`, `|` and a lone backtick are backslash-escaped, `<` and `>`
/// become entities, a line break becomes `<br>` (a raw one would end the paragraph or the list
/// item). A pair of backticks is kept as a code span: the tool quotes names that way in its own
/// sentences (`` `login` p99 340 ms > 200 ms ``), and its content is shown as written.
pub(crate) fn escape(text: &str) -> String {
    escape_in(text, false)
}

/// Escapes text for a Markdown table cell: as [`escape`], and a `|` inside a code span is escaped
/// too (GitHub splits the row at it otherwise).
pub(crate) fn escape_cell(text: &str) -> String {
    escape_in(text, true)
}

fn escape_in(text: &str, cell: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '`' => match rest.find('`') {
                Some(end) => {
                    out.push('`');
                    for c in rest[..end].chars() {
                        match c {
                            '|' if cell => out.push_str("\\|"),
                            // A code span cannot hold a line break in a cell or a list item.
                            '\r' | '\n' => out.push(' '),
                            c => out.push(c),
                        }
                    }
                    out.push('`');
                    rest = &rest[end + 1..];
                }
                None => out.push_str("\\`"),
            },
            '\\' | '*' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => {
                rest = rest.strip_prefix('\n').unwrap_or(rest);
                out.push_str("<br>");
            }
            '\n' => out.push_str("<br>"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
pub(in crate::report) mod tests {
    use super::*;
    use crate::measure::PhaseMeasurement;
    use crate::plan::RampOutcome;
    use crate::result::{
        BaselineRef, Environment, GitInfo, PhaseRecord, RESULT_FORMAT_VERSION, RunStatus, ToolInfo,
    };
    use crate::result::{Comparison, Verdict};
    use serde::Deserialize;
    use serde_json::Value;
    use std::path::PathBuf;
    use test_case::test_case;

    #[test]
    fn table_cells_cannot_be_broken_by_text() {
        assert_eq!(escape("a|b <x>"), "a\\|b &lt;x&gt;");
    }

    #[test_case("a|b", "a\\|b"; "a pipe")]
    #[test_case("<b>", "&lt;b&gt;"; "angle brackets")]
    #[test_case("a*b*", "a\\*b\\*"; "stars")]
    #[test_case("C:\\temp\\*", "C:\\\\temp\\\\\\*"; "backslashes")]
    #[test_case("one\ntwo", "one<br>two"; "a line break")]
    #[test_case("one\r\ntwo\rthree", "one<br>two<br>three"; "carriage returns")]
    #[test_case("it`s", "it\\`s"; "a lone backtick")]
    #[test_case("`login` p99 > 200 ms", "`login` p99 &gt; 200 ms"; "a code span is kept")]
    #[test_case("`a*b<c>`", "`a*b<c>`"; "a code span shows its content as written")]
    #[test_case("`a\nb`", "`a b`"; "a code span keeps to one line")]
    #[test_case("`a|b`", "`a|b`"; "a pipe in a code span outside a table")]
    fn text_is_escaped_character_by_character(text: &str, expected: &str) {
        assert_eq!(escape(text), expected);
    }

    #[test_case("`a|b`", "`a\\|b`"; "a pipe in a code span")]
    #[test_case("a|b\nc", "a\\|b<br>c"; "a pipe and a line break")]
    fn cells_also_escape_pipes_in_code_spans(text: &str, expected: &str) {
        assert_eq!(escape_cell(text), expected);
    }

    /// A real run, trimmed: the demo service with `DEMO_CPU_US=6000` against a baseline of the
    /// same commit without it (see tests/fixtures/report/README.md).
    const AFTER: &str = include_str!("../../../tests/fixtures/report/after.json");

    /// The typed result behind a stored `result.json`, as `run` held it when it wrote the summary.
    /// This build's tool version stands in for the stored one, as it would in a live run.
    fn typed(value: &Value) -> RunResult {
        fn part<T: for<'de> Deserialize<'de>>(value: &Value) -> T {
            T::deserialize(value).unwrap()
        }
        let text = |v: &Value| v.as_str().unwrap().to_owned();
        let env = &value["environment"];
        RunResult {
            format_version: RESULT_FORMAT_VERSION,
            tool: ToolInfo::current(),
            started_at_unix_ms: value["started_at_unix_ms"].as_u64().unwrap(),
            status: RunStatus::Complete,
            git: Some(GitInfo {
                commit: text(&value["git"]["commit"]),
                dirty: value["git"]["dirty"].as_bool().unwrap(),
            }),
            profile: text(&value["profile"]),
            config_path: PathBuf::from(text(&value["config_path"])),
            slo: None,
            config_hash: text(&value["config_hash"]),
            environment: Environment {
                cpu_model: text(&env["cpu_model"]),
                cores: env["cores"].as_u64().unwrap() as usize,
                kernel: text(&env["kernel"]),
                engine_version: env["engine_version"].as_str().map(str::to_owned),
                generator_core: env["generator_core"].as_u64().map(|c| c as usize),
                target_cpuset: env["target_cpuset"].as_str().map(str::to_owned),
            },
            target: None,
            replicas: Vec::new(),
            target_exit: None,
            ramp: Some(part::<RampOutcome>(&value["ramp"])),
            headroom: None,
            soak: Some(part(&value["soak"])),
            soak_skipped: None,
            spike: None,
            spike_skipped: None,
            stress: None,
            stress_skipped: None,
            valid: value["valid"].as_bool(),
            baseline: Some(BaselineRef {
                commit: text(&value["baseline"]["commit"]),
                distance: value["baseline"]["distance"].as_u64().unwrap() as usize,
                store: text(&value["baseline"]["store"]),
            }),
            comparison: Some(part::<Comparison>(&value["comparison"])),
            verdict: Some(part::<Verdict>(&value["verdict"])),
            phases: value["phases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| PhaseRecord {
                    schedule_hash: text(&p["schedule_hash"]),
                    measurement: part::<PhaseMeasurement>(p),
                })
                .collect(),
            resources: part(&value["resources"]),
            // The summary does not show the calibration (the verdict's rule does, when it fires).
            calibration: None,
            mode: crate::result::MeasurementMode::Stored,
            paired: None,
            shards: None,
            dependencies: Vec::new(),
            audits: Vec::new(),
            probes: Vec::new(),
            probe_checks: Vec::new(),
            stubs: Vec::new(),
            faults: Vec::new(),
            data: None,
        }
    }

    /// The trimmed real run with `probes`, for the probes' renderers.
    pub(in crate::report) fn with_probes(
        probes: Vec<crate::measure::probe::ProbeRecord>,
    ) -> RunResult {
        let value: Value = serde_json::from_str(AFTER).unwrap();
        RunResult {
            probes,
            ..typed(&value)
        }
    }

    #[test]
    fn the_summary_of_a_regression_reads_well() {
        let value: Value = serde_json::from_str(AFTER).unwrap();
        let md = markdown_summary(&typed(&value));
        insta::with_settings!({filters => vec![
            // Commits and config hashes, as the summary abbreviates them.
            (r"`[0-9a-f]{12}`", "`[hash]`"),
            (r"cargo-loadgate \d+\.\d+\.\d+\S*", "cargo-loadgate [version]"),
            (r"dir:[^)]+", "dir:[path]"),
        ]}, {
            insta::assert_snapshot!(md);
        });
    }

    #[test]
    fn the_summary_of_a_paired_run_says_how_it_was_decided_and_shows_each_pair() {
        let md = markdown_summary(&crate::result::testing::paired());
        insta::with_settings!({filters => vec![
            (r"`[0-9a-f]{12}`", "`[hash]`"),
            (r"cargo-loadgate \d+\.\d+\.\d+\S*", "cargo-loadgate [version]"),
        ]}, {
            insta::assert_snapshot!(md);
        });
    }

    /// The headroom's lines: the statement and the failed check after the ramp, the comparison
    /// with the baseline's under the checks.
    /// Each audit is a line with its statement (every term), a failed one under the regression
    /// icon, and each retried operation a line of its extra load.
    #[test]
    fn the_summary_states_each_audit_and_the_retries() {
        use crate::measure::OperationTally;
        use crate::result::{AuditCheckOutcome, AuditOutcome, AuditStatus};
        let value: Value = serde_json::from_str(AFTER).unwrap();
        let mut result = typed(&value);
        assert!(!markdown_summary(&result).contains("**Retries:**"));
        result.audits = vec![AuditOutcome {
            name: "ledger".to_owned(),
            request: "GET /ledger/summary".to_owned(),
            status: AuditStatus::Failed,
            reason: Some("/duplicates equals 0 does not hold".to_owned()),
            checks: vec![AuditCheckOutcome {
                pointer: "/duplicates".to_owned(),
                relation: "equals".to_owned(),
                operand: "0".to_owned(),
                answer: Some(12.0),
                expected: 0.0,
                held: false,
            }],
        }];
        result.phases[0].measurement.operations[0].tally = OperationTally {
            logical: 10,
            attempts: 12,
            acknowledged: 10,
        };
        let md = markdown_summary(&result);
        assert!(
            md.contains("**Audit:** ❌ audit `ledger` (GET /ledger/summary) failed: /duplicates equals 0 does not hold [/duplicates = 12 equals 0: does not hold]\n"),
            "{md}"
        );
        let name = &result.phases[0].measurement.operations[0].name;
        assert!(md.contains(&format!("**Retries:** `{name}`: ")), "{md}");
        assert!(md.contains("(2 retries, "), "{md}");
    }

    /// The data tier a run loaded is stated with each step's digest and last line.
    #[test]
    fn the_summary_states_the_data_tier() {
        use crate::config::DataStage;
        use crate::targets::{DataRecord, DataStepRecord};
        let value: Value = serde_json::from_str(AFTER).unwrap();
        let mut result = typed(&value);
        assert!(!markdown_summary(&result).contains("**Data:**"));
        result.data = Some(DataRecord {
            tier: Some("10k".to_owned()),
            seed: 42,
            vars: std::collections::BTreeMap::new(),
            steps: vec![DataStepRecord {
                name: "seed".to_owned(),
                after: DataStage::Dependencies,
                seconds: 2.46,
                output_sha256: "0123456789abcdef0123".to_owned(),
                output: vec!["9f2c…".to_owned(), "d41d8cd98f00".to_owned()],
            }],
        });
        let md = markdown_summary(&result);
        assert!(
            md.contains(
                "**Data:** tier `10k`, seed 42; `seed` 2.5 s (output sha256 0123456789ab: \
                 d41d8cd98f00)\n"
            ),
            "{md}"
        );
    }

    #[test]
    fn the_summary_states_the_headroom_its_check_and_its_comparison() {
        use crate::compare::{ProductionLoad, headroom};
        use crate::result::{HeadroomComparison, MetricOutcome};
        let value: Value = serde_json::from_str(AFTER).unwrap();
        let mut result = typed(&value);
        let ramp = result.ramp.clone().unwrap();
        let production = ProductionLoad {
            sessions_per_sec: ramp.knee_sessions_per_sec.unwrap() / 0.9,
            requests_per_session: Some(4.4),
        };
        result.headroom = Some(headroom(&ramp, &production, Some(1.2)));
        result.comparison.as_mut().unwrap().headroom = Some(HeadroomComparison {
            base_production_sessions_per_sec: production.sessions_per_sec,
            head_production_sessions_per_sec: production.sessions_per_sec,
            same_as_capacity: true,
            estimate: Some(0.8),
            low: Some(0.7),
            high: Some(0.9),
            outcome: MetricOutcome::Regression,
            note: "the production load is 25.0 sessions/s on both sides, so the headroom's ratio \
                   is capacity's (-20.0%, interval -30.0% to -10.0%): judged once, as capacity"
                .to_owned(),
        });
        let md = markdown_summary(&result);
        let lines: Vec<&str> = md.lines().filter(|l| l.contains("Headroom")).collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn a_stored_run_has_no_paired_section() {
        let value: Value = serde_json::from_str(AFTER).unwrap();
        let md = markdown_summary(&typed(&value));
        assert!(!md.contains("**Paired:**") && !md.contains("**Pairs**"));
    }
}
