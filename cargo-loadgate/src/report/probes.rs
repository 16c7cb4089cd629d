//! The probes as the terminal and the Markdown summary show them: per probe its series (mean and
//! largest sample; a counter as a rate, with its increase over the run), a missing probe with why,
//! and the limits as `compare::probe_checks` judged them. Formatting only.

use super::markdown::{escape, escape_cell};
use crate::measure::probe::{ProbeRecord, ProbeStatus, SeriesKind, format_value};
use crate::result::RunResult;
use std::fmt::Write as _;

/// One series' row: name, mean, largest sample, increase over the run (counters).
fn rows(probe: &ProbeRecord) -> Vec<[String; 4]> {
    probe
        .series
        .iter()
        .map(|(name, kind)| {
            let values: Vec<f64> = probe.points(name).into_iter().map(|(_, v)| v).collect();
            let unit = match kind {
                SeriesKind::Counter => "/s",
                SeriesKind::Gauge => "",
            };
            let mean = if values.is_empty() {
                "–".to_owned()
            } else {
                format!(
                    "{}{unit}",
                    format_value(values.iter().sum::<f64>() / values.len() as f64)
                )
            };
            let max = probe
                .max(name)
                .map_or_else(|| "–".to_owned(), |m| format!("{}{unit}", format_value(m)));
            let total = probe
                .totals
                .get(name)
                .map_or_else(String::new, |t| format_value(*t));
            [name.clone(), mean, max, total]
        })
        .collect()
}

fn heading(probe: &ProbeRecord) -> String {
    format!(
        "probe {} ({} of `{}`, {} samples{})",
        probe.name,
        probe.kind,
        probe.dependency,
        probe.samples.len(),
        match (probe.sample_errors, &probe.last_error) {
            (0, _) => String::new(),
            (n, Some(e)) => format!(", {n} failed: {e}"),
            (n, None) => format!(", {n} failed"),
        }
    )
}

/// The probes for the terminal; empty without probes.
pub fn probe_lines(result: &RunResult) -> String {
    let mut out = String::new();
    for probe in &result.probes {
        if probe.status == ProbeStatus::Missing {
            let _ = writeln!(
                out,
                "\nprobe {}: missing: {}",
                probe.name,
                probe.missing.as_deref().unwrap_or("not sampled")
            );
            continue;
        }
        let _ = writeln!(out, "\n{}", heading(probe));
        let table = rows(probe);
        let width = table.iter().map(|r| r[0].len()).max().unwrap_or(0);
        for [name, mean, max, total] in table {
            let total = if total.is_empty() {
                String::new()
            } else {
                format!("  run total {total}")
            };
            let _ = writeln!(out, "  {name:<width$}  mean {mean:<9} max {max:<9}{total}");
        }
        for line in derived(probe) {
            let _ = writeln!(out, "  {}", line.replace('`', ""));
        }
        if !probe.unseen.is_empty() {
            let _ = writeln!(out, "  never exposed: {}", probe.unseen.join(", "));
        }
        if let Some(why) = &probe.statements_missing {
            let _ = writeln!(out, "  statements: none ({why})");
        } else if !probe.statements.is_empty() {
            let _ = writeln!(out, "  statements, the most blocks first:");
            for st in probe.statements.iter().take(TERMINAL_STATEMENTS) {
                let _ = writeln!(
                    out,
                    "    {:>8} calls {:>9} blocks a call {:>9} ms a call  {}",
                    st.calls,
                    format_value(st.blocks_per_call),
                    format_value(st.mean_ms),
                    st.query
                );
            }
        }
    }
    for check in &result.probe_checks {
        let _ = writeln!(
            out,
            "probe limit {}: {}",
            if check.passed { "held" } else { "FAILED" },
            check.message
        );
    }
    out
}

/// The probes' section of the Markdown summary; empty without probes.
pub fn probe_markdown(result: &RunResult) -> String {
    let mut md = String::new();
    if result.probes.is_empty() {
        return md;
    }
    let _ = writeln!(md, "\n### Probes\n");
    for check in &result.probe_checks {
        let _ = writeln!(
            md,
            "- {} {}",
            if check.passed { "✅" } else { "❌" },
            escape(&check.message)
        );
    }
    for probe in &result.probes {
        if probe.status == ProbeStatus::Missing {
            let _ = writeln!(
                md,
                "\n**{}: missing.** {}",
                escape(&probe.name),
                escape(probe.missing.as_deref().unwrap_or("not sampled"))
            );
            continue;
        }
        let _ = writeln!(md, "\n{}\n", escape(&heading(probe)));
        let _ = writeln!(
            md,
            "| series | mean | max | run total |\n|---|---:|---:|---:|"
        );
        for [name, mean, max, total] in rows(probe) {
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} |",
                escape_cell(&name),
                escape_cell(&mean),
                escape_cell(&max),
                escape_cell(&total)
            );
        }
        let notes = derived(probe);
        if !notes.is_empty() {
            md.push('\n');
        }
        for line in notes {
            let _ = writeln!(md, "- {line}");
        }
        if !probe.unseen.is_empty() {
            let unseen: Vec<String> = probe.unseen.iter().map(|s| format!("`{s}`")).collect();
            let _ = writeln!(md, "\nNever exposed: {}.", escape(&unseen.join(", ")));
        }
        if let Some(why) = &probe.statements_missing {
            let _ = writeln!(md, "\nStatements: none ({}).", escape(why));
        } else if !probe.statements.is_empty() {
            let _ = writeln!(
                md,
                "\n| statement (the most blocks first) | calls | blocks a call | ms a call |\n\
                 |---|---:|---:|---:|"
            );
            for st in &probe.statements {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} |",
                    escape_cell(&format!("`{}`", st.query)),
                    st.calls,
                    format_value(st.blocks_per_call),
                    format_value(st.mean_ms)
                );
            }
        }
    }
    md
}

/// How many statements the terminal shows (the Markdown and result.json keep ten).
const TERMINAL_STATEMENTS: usize = 5;

/// What the series say together, one line each (Markdown code spans around series names): the
/// blocks per committed transaction of a `postgres` probe, and every series that grew or fell
/// through the soak with its interval clear of zero.
fn derived(probe: &ProbeRecord) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(blocks) = probe.blocks_per_commit() {
        out.push(format!(
            "{} blocks per committed transaction (`blks_hit` + `blks_read` over `xact_commit`, the \
             run's totals)",
            format_value(blocks)
        ));
    }
    out.extend(
        probe
            .soak_trends()
            .into_iter()
            .map(|t| format!("through the soak, {t}")),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::probe::{POSTGRES_SERIES, ProbeRecorder};

    #[test]
    fn a_sampled_probe_shows_rates_and_totals_and_a_missing_one_why() {
        let mut r = ProbeRecorder::new("db", "postgres", "db", POSTGRES_SERIES);
        let reading = |commits: f64| -> Vec<f64> {
            POSTGRES_SERIES
                .iter()
                .map(|s| {
                    if s.name == "xact_commit" {
                        commits
                    } else {
                        1.0
                    }
                })
                .collect()
        };
        r.push(0.0, &reading(100.0));
        r.push(1.0, &reading(150.0));
        r.push(2.0, &reading(250.0));
        let sampled = r.finish();
        let missing = ProbeRecord::missing("cache", "postgres", "pg2", "cannot connect".to_owned());
        let lines = crate::report::markdown::tests::with_probes(vec![sampled, missing]);
        let text = probe_lines(&lines);
        assert!(
            text.contains("probe db (postgres of `db`, 3 samples)"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.contains("xact_commit")
                && l.contains("mean 75/s")
                && l.contains("max 100/s")
                && l.contains("run total 150")),
            "{text}"
        );
        assert!(
            text.contains("probe cache: missing: cannot connect"),
            "{text}"
        );
        let md = probe_markdown(&lines);
        assert!(
            md.contains("| `xact_commit` | 75/s | 100/s | 150 |"),
            "{md}"
        );
        assert!(md.contains("**cache: missing.** cannot connect"), "{md}");
        // The blocks of every series are 1 at each reading: no increase, so 0 per commit.
        assert!(
            text.contains("  0 blocks per committed transaction (blks_hit + blks_read over"),
            "{text}"
        );
        assert!(
            md.contains("- 0 blocks per committed transaction (`blks_hit` + `blks_read` over"),
            "{md}"
        );
    }

    /// The statements a postgres probe ranked are listed, the most blocks first; a probe without
    /// them says why.
    #[test]
    fn the_statements_are_listed_with_their_blocks_a_call() {
        use crate::measure::probe::StatementRecord;
        let mut r = ProbeRecorder::new("db", "postgres", "db", POSTGRES_SERIES);
        r.set_statements(Ok(vec![StatementRecord {
            query: "SELECT id FROM transactions WHERE account_id = $1".to_owned(),
            calls: 40,
            blocks: 100_000,
            blocks_per_call: 2_500.0,
            mean_ms: 12.5,
        }]));
        let mut bare = ProbeRecorder::new("db2", "postgres", "db2", POSTGRES_SERIES);
        bare.set_statements(Err(
            "pg_stat_statements cannot be read: no such view".to_owned()
        ));
        let result = crate::report::markdown::tests::with_probes(vec![r.finish(), bare.finish()]);
        let text = probe_lines(&result);
        let row = concat!(
            "          40 calls      2500 blocks a call      12.5 ms a call  ",
            "SELECT id FROM transactions WHERE account_id = $1"
        );
        assert!(
            text.contains(&format!("  statements, the most blocks first:\n{row}\n")),
            "{text}"
        );
        assert!(
            text.contains("  statements: none (pg_stat_statements cannot be read: no such view)"),
            "{text}"
        );
        let md = probe_markdown(&result);
        assert!(
            md.contains(
                "| `SELECT id FROM transactions WHERE account_id = $1` | 40 | 2500 | 12.5 |"
            ),
            "{md}"
        );
    }

    /// A series that grew through the soak is named, with its rate per minute and interval.
    #[test]
    fn a_series_growing_through_the_soak_is_named() {
        let mut r = ProbeRecorder::new("db", "postgres", "db", POSTGRES_SERIES);
        for t in 0..=30 {
            let reading: Vec<f64> = POSTGRES_SERIES
                .iter()
                .map(|s| match s.name {
                    "connections_waiting" => f64::from(t) / 10.0,
                    "xact_commit" => f64::from(t) * 100.0,
                    _ => 0.0,
                })
                .collect();
            r.push(f64::from(t), &reading);
        }
        let mut probe = r.finish();
        probe.fit_soak_slopes(0.0, 30.0);
        let result = crate::report::markdown::tests::with_probes(vec![probe]);
        let text = probe_lines(&result);
        // 0.1 a second: 6 a minute (printed as 6 or 6.00, as the fit rounds).
        assert!(
            text.contains("  through the soak, connections_waiting grows 6"),
            "{text}"
        );
        let md = probe_markdown(&result);
        assert!(
            md.contains("- through the soak, `connections_waiting` grows 6"),
            "{md}"
        );
        assert!(md.contains("/min ("), "{md}");
        assert!(!md.contains("`xact_commit` grows"), "{md}");
    }
}
