//! `cargo loadgate load`: the production load from access logs (seed 000): counts per interval,
//! the inactive ones dropped, mean + z·σ, written as `sessions-per-sec` into a `[workload]`
//! snippet.

use super::LoadOpts;
use super::model::{config_flags, fail, prepare, print_report};
use crate::logs::{LoadOptions, LoadReport, read_load};
use std::fmt::Write as _;

/// Runs `cargo loadgate load` and returns the exit code: 0 with the load, 2 when the logs do not
/// fit what was asked (no key, every interval inactive: the message gives the counts), 1 when a
/// file cannot be read.
pub fn run(opts: &LoadOpts) -> i32 {
    // Sessions need no routes; `--operation` does, and finds them in the config.
    let load_config =
        config_flags(&opts.config) || (opts.operation.is_some() && opts.logs.routes.is_empty());
    let (scan, routes) = match prepare(&opts.config, &opts.logs, load_config) {
        Ok((scan, routes, _)) => (scan, routes),
        Err(code) => return code,
    };
    let load = LoadOptions {
        interval: opts.interval,
        active_above: opts.active_above,
        operation: opts.operation.clone(),
        quantile: opts.quantile,
    };
    match read_load(&scan, routes, &load) {
        Ok(report) => print_report(opts.logs.json, &report, render),
        Err(e) => fail(&e),
    }
}

/// The terminal report.
pub fn render(r: &LoadReport) -> String {
    let mut out = String::new();
    let l = &r.load;
    let _ = writeln!(
        out,
        "read {} file(s), {} lines, {} malformed",
        r.scan.files.len(),
        r.scan.lines,
        r.scan.bad_lines
    );
    if let Some(k) = &r.session_key {
        let _ = writeln!(out, "counting sessions starting, by `{k}`");
    } else {
        let _ = writeln!(out, "counting {}", r.counted);
    }
    let _ = writeln!(
        out,
        "{} intervals of {}; active: {} above {}{}",
        l.intervals,
        crate::config::format_duration(std::time::Duration::from_secs_f64(r.interval_s)),
        l.active,
        trim(l.threshold),
        if r.threshold_proposed {
            format!(" (proposed: {})", r.threshold_rule)
        } else {
            " (given)".to_owned()
        }
    );
    let _ = writeln!(out, "mean {:.2}, σ {:.2} per interval", l.mean, l.sd);
    let _ = writeln!(
        out,
        "production load ({}th percentile) = mean + {:.2}σ = {:.2} per interval = {:.4}/s",
        trim(l.quantile * 100.0),
        l.z,
        l.load_per_interval,
        r.sessions_per_sec
    );
    let _ = writeln!(
        out,
        "busiest interval: {} with {}",
        r.busiest.start, r.busiest.count
    );
    out.push('\n');
    out.push_str(&r.workload_toml);
    out
}

fn trim(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}
