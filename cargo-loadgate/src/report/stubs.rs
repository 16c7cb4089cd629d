//! The `[[stub]]`s as the terminal and the Markdown summary show them: what each one served, its
//! delays (the dependency's latency as the service met it) beside the time it took to serve, and
//! its errors and timeouts. Formatting only.

use super::markdown::{escape, escape_cell};
use crate::result::RunResult;
use crate::stub::StubRecord;
use std::fmt::Write as _;

/// `20.04` (milliseconds) as `20 ms`, as the step tables write latencies.
fn ms(x: f64) -> String {
    crate::plan::format_latency(std::time::Duration::from_secs_f64(x.max(0.0) / 1e3))
}

/// One line for the terminal: `stub prices (…): 1234 requests; delay p50 20 ms, p99 180 ms, max
/// 251 ms; served p99 181 ms; 12 errors, 0 timeouts, 0 unmatched`.
pub fn stub_line(stub: &StubRecord) -> String {
    format!(
        "stub {} ({}): {} requests; delay p50 {}, p99 {}, max {}; served p99 {}; {} errors, {} \
         timeouts, {} unmatched",
        stub.name,
        stub.latency,
        stub.requests,
        ms(stub.delay.p50_ms),
        ms(stub.delay.p99_ms),
        ms(stub.delay.max_ms),
        ms(stub.served.p99_ms),
        stub.errors,
        stub.timeouts,
        stub.unmatched
    )
}

/// The Markdown section: one row per stub; empty without stubs.
pub fn stub_markdown(result: &RunResult) -> String {
    let mut md = String::new();
    if result.stubs.is_empty() {
        return md;
    }
    let _ = writeln!(
        md,
        "\n### Stubs\n\nThe delay is the dependency's latency as the service met it; served adds \
         the stub's own time.\n"
    );
    let _ = writeln!(
        md,
        "| stub | latency | requests | delay p50 | delay p99 | served p99 | errors | timeouts | \
         unmatched |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for s in &result.stubs {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            escape_cell(&s.name),
            escape_cell(&s.latency),
            s.requests,
            ms(s.delay.p50_ms),
            ms(s.delay.p99_ms),
            ms(s.served.p99_ms),
            s.errors,
            s.timeouts,
            s.unmatched
        );
    }
    if result.faults.iter().any(|f| f.replica.is_none()) {
        let _ = writeln!(md, "\n**Faults:**\n");
        for f in result.faults.iter().filter(|f| f.replica.is_none()) {
            let _ = writeln!(
                md,
                "- {} {}",
                if f.verified { "✅" } else { "❌" },
                escape(&f.statement())
            );
        }
    }
    let lagging: Vec<&StubRecord> = result
        .stubs
        .iter()
        .filter(|s| s.requests > 0 && s.served.p99_ms > s.delay.p99_ms * 1.5 + 5.0)
        .collect();
    for s in lagging {
        let _ = writeln!(
            md,
            "\n⚠️ {}",
            escape(&format!(
                "stub `{}` took longer to serve (p99 {}) than its delays (p99 {}): the \
                 machine slowed it, so the dependency's latency was higher than configured",
                s.name,
                ms(s.served.p99_ms),
                ms(s.delay.p99_ms)
            ))
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stub::{StubPercentiles, StubRecord};

    fn record(served_p99: f64) -> StubRecord {
        StubRecord {
            name: "prices".to_owned(),
            url: "http://127.0.0.1:4000".to_owned(),
            latency: "lognormal, p50 20ms, p99 180ms".to_owned(),
            requests: 1234,
            errors: 12,
            timeouts: 1,
            unmatched: 0,
            delay: StubPercentiles {
                p50_ms: 20.04,
                p99_ms: 179.6,
                max_ms: 251.0,
            },
            served: StubPercentiles {
                p50_ms: 20.2,
                p99_ms: served_p99,
                max_ms: 260.0,
            },
            routes: Vec::new(),
            states: Vec::new(),
            seconds: Vec::new(),
        }
    }

    #[test]
    fn a_stub_reads_as_one_line() {
        assert_eq!(
            stub_line(&record(181.0)),
            "stub prices (lognormal, p50 20ms, p99 180ms): 1234 requests; delay p50 20 ms, p99 \
             180 ms, max 251 ms; served p99 181 ms; 12 errors, 1 timeouts, 0 unmatched"
        );
    }

    #[test]
    fn the_markdown_has_a_row_per_stub_and_names_a_stub_that_lagged() {
        let mut result = crate::report::markdown::tests::with_probes(Vec::new());
        assert_eq!(stub_markdown(&result), "");
        result.stubs = vec![record(181.0)];
        let md = stub_markdown(&result);
        assert!(
            md.contains("| `prices` | lognormal, p50 20ms, p99 180ms | 1234 | 20 ms | 180 ms | 181 ms | 12 | 1 | 0 |"),
            "{md}"
        );
        assert!(!md.contains("⚠️"), "{md}");
        result.stubs = vec![record(400.0)];
        assert!(stub_markdown(&result).contains("took longer to serve (p99 400 ms)"));
    }
}
