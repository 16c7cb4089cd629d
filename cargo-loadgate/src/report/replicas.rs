//! The replicas of a target booted with `[target] replicas` above one, as the terminal and the
//! Markdown summary show them: per phase, what each replica was sent, what it failed, and what
//! the generator's client did about it (failovers, ejections, moved sessions), with the times of
//! its failures and of the logical errors it left. Formatting only.

use super::markdown::{escape, escape_cell};
use crate::measure::ReplicaCounts;
use crate::result::RunResult;
use std::fmt::Write as _;

/// `+1203…+1250 ms` (from the start of the measured part), or `—` without any.
fn span(first: Option<f64>, last: Option<f64>) -> String {
    match (first, last) {
        (Some(a), Some(b)) if (b - a).abs() < 0.5 => format!("{a:+.0} ms"),
        (Some(a), Some(b)) => format!("{a:+.0}…{b:+.0} ms"),
        _ => "—".to_owned(),
    }
}

/// One replica's figures in words: `1234 attempts, 45 failed (+1203…+1250 ms), 45 failed over,
/// ejected 1×, 12 moved, 0 errors`.
pub fn replica_words(r: &ReplicaCounts) -> String {
    let mut s = format!("{} attempts, {} failed", r.attempts, r.failed);
    if r.failed > 0 {
        let _ = write!(s, " ({})", span(r.first_failed_ms, r.last_failed_ms));
    }
    if r.failovers > 0 {
        let _ = write!(s, ", {} failed over", r.failovers);
    }
    if r.ejections > 0 {
        let _ = write!(s, ", ejected {}×", r.ejections);
    }
    if r.moved > 0 {
        let _ = write!(s, ", {} moved", r.moved);
    }
    let _ = write!(s, ", {} errors", r.errors);
    if r.errors > 0 {
        let _ = write!(s, " ({})", span(r.first_error_ms, r.last_error_ms));
    }
    s
}

/// The terminal's lines: one per phase that had replicas, `replicas in soak: #0 …; #1 …`.
pub fn replica_lines(result: &RunResult) -> Vec<String> {
    result
        .phases
        .iter()
        .filter(|p| !p.measurement.replicas.is_empty())
        .map(|p| {
            let each: Vec<String> = p
                .measurement
                .replicas
                .iter()
                .enumerate()
                .map(|(i, r)| format!("#{i} {}", replica_words(r)))
                .collect();
            format!("replicas in {}: {}", p.measurement.name, each.join("; "))
        })
        .collect()
}

/// The Markdown section: one row per phase and replica; empty without replicas.
pub fn replica_markdown(result: &RunResult) -> String {
    let mut md = String::new();
    if result
        .phases
        .iter()
        .all(|p| p.measurement.replicas.is_empty())
    {
        return md;
    }
    let _ = writeln!(
        md,
        "\n### Replicas\n\nEach session sticks to one replica. Failed: attempts that ended in a \
         transport error; failed over: those sent again to another replica; errors: logical \
         operations that failed on it. Times are from the start of the phase's measured part.\n"
    );
    let _ = writeln!(
        md,
        "| phase | replica | attempts | failed | failures at | failed over | ejected | moved | \
         errors | errors at |\n|---|---:|---:|---:|---|---:|---:|---:|---:|---|"
    );
    for p in &result.phases {
        for (i, r) in p.measurement.replicas.iter().enumerate() {
            let _ = writeln!(
                md,
                "| {} | {i} | {} | {} | {} | {} | {} | {} | {} | {} |",
                escape_cell(&p.measurement.name),
                r.attempts,
                r.failed,
                span(r.first_failed_ms, r.last_failed_ms),
                r.failovers,
                r.ejections,
                r.moved,
                r.errors,
                span(r.first_error_ms, r.last_error_ms),
            );
        }
    }
    if result.faults.iter().any(|f| f.replica.is_some()) {
        let _ = writeln!(md, "\n**Faults:**\n");
        for f in result.faults.iter().filter(|f| f.replica.is_some()) {
            let _ = writeln!(
                md,
                "- {} {}",
                if f.verified { "✅" } else { "❌" },
                escape(&f.statement())
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_in_words_names_only_what_happened() {
        let quiet = ReplicaCounts {
            attempts: 10,
            ..ReplicaCounts::default()
        };
        assert_eq!(replica_words(&quiet), "10 attempts, 0 failed, 0 errors");
        let hit = ReplicaCounts {
            attempts: 100,
            failed: 7,
            failovers: 6,
            ejections: 2,
            moved: 30,
            errors: 1,
            first_failed_ms: Some(1203.4),
            last_failed_ms: Some(2250.0),
            first_error_ms: Some(1204.0),
            last_error_ms: Some(1204.2),
        };
        assert_eq!(
            replica_words(&hit),
            "100 attempts, 7 failed (+1203…+2250 ms), 6 failed over, ejected 2×, 30 moved, 1 \
             errors (+1204 ms)"
        );
    }
}
