//! `cargo loadgate model`: estimate the user model from access logs, print it with its intervals
//! and validation, and write the `[workload]` TOML it implies.

use super::{ExitCode, LogFormatArg, LogOpts, ModelOpts, render::render_error};
use crate::config::LoadgateConfig;
use crate::logs::{
    JsonFields, LogError, LogFormat, ModelReport, Route, ScanOptions, SessionKey, read_model,
    routes_from_workload,
};
use std::fmt::Write as _;

/// Runs `cargo loadgate model` and returns the exit code: 0 with the model, 2 when the logs do not
/// fit what was asked (the message says how), 1 when a file cannot be read.
pub fn run(opts: &ModelOpts) -> i32 {
    let load_config = config_flags(&opts.config) || opts.logs.routes.is_empty();
    let (scan, routes, config) = match prepare(&opts.config, &opts.logs, load_config) {
        Ok(prepared) => prepared,
        Err(code) => return code,
    };
    let label = config.as_ref().map(|c| c.source_label.clone());
    let against = config
        .as_ref()
        .zip(label.as_deref())
        .map(|(c, l)| (l, &c.config.workload));
    match read_model(&scan, routes, against) {
        Ok(report) => {
            if let Some(out) = &opts.out
                && let Err(e) =
                    crate::result::write_file_atomic(out, report.workload_toml.as_bytes())
            {
                eprint!("{}", render_error(&e));
                return ExitCode::OTHER_ERROR;
            }
            print_report(opts.logs.json, &report, render)
        }
        Err(e) => fail(&e),
    }
}

/// Prints `report` as JSON or as `render` writes it, and returns the exit code.
pub(super) fn print_report<T: serde::Serialize>(
    json: bool,
    report: &T,
    render: fn(&T) -> String,
) -> i32 {
    if !json {
        print!("{}", render(report));
        return ExitCode::PASS;
    }
    match serde_json::to_string_pretty(report) {
        Ok(text) => {
            println!("{text}");
            ExitCode::PASS
        }
        Err(e) => {
            eprint!("{}", render_error(&e));
            ExitCode::OTHER_ERROR
        }
    }
}

/// Renders a log error and picks its exit code.
pub(super) fn fail(e: &LogError) -> i32 {
    eprint!("{}", render_error(e));
    ExitCode::for_logs(e.kind())
}

/// A config the routes came from, with how to name it.
pub(super) struct SelectedConfig {
    pub(super) config: LoadgateConfig,
    pub(super) source_label: String,
}

/// Whether any flag names a config.
pub(super) fn config_flags(c: &super::ConfigOpts) -> bool {
    c.package.is_some() || c.config.is_some() || c.manifest_path.is_some()
}

/// The scan options, the routes and (with `load_config`) the selected config from the flags; the
/// config's operations are the routes unless `--route` gives them.
pub(super) fn prepare(
    config_opts: &super::ConfigOpts,
    logs: &LogOpts,
    load_config: bool,
) -> Result<(ScanOptions, Vec<Route>, Option<SelectedConfig>), i32> {
    let usage = |message: String| {
        eprintln!("error: {message}");
        ExitCode::USAGE
    };
    let json_fields = match &logs.json_fields {
        Some(spec) => JsonFields::default().with_overrides(spec).map_err(usage)?,
        None => JsonFields::default(),
    };
    let session_key = logs
        .session_key
        .as_deref()
        .map(SessionKey::parse)
        .transpose()
        .map_err(usage)?;
    let mut routes = logs
        .routes
        .iter()
        .map(|r| Route::parse_arg(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let config = if load_config {
        let cwd = std::env::current_dir().map_err(|e| {
            eprint!("{}", render_error(&e));
            ExitCode::OTHER_ERROR
        })?;
        match crate::config::load(&config_opts.load_opts(cwd)) {
            Ok(config) => {
                let source_label = config_opts
                    .config
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .or_else(|| {
                        config_opts
                            .package
                            .as_ref()
                            .map(|p| format!("`{p}` config"))
                    })
                    .unwrap_or_else(|| "config".to_owned());
                Some(SelectedConfig {
                    config,
                    source_label,
                })
            }
            Err(e) => {
                eprint!("{}", render_error(&e));
                return Err(ExitCode::USAGE);
            }
        }
    } else {
        None
    };
    if routes.is_empty()
        && let Some(c) = &config
    {
        routes = routes_from_workload(&c.config.workload);
    }
    let scan = ScanOptions {
        paths: logs.from.clone(),
        format: logs.format.map(|f| match f {
            LogFormatArg::Combined => LogFormat::Combined,
            LogFormatArg::Common => LogFormat::Common,
            LogFormatArg::Json => LogFormat::Json,
        }),
        json_fields,
        session_key,
        session_gap: logs.session_gap,
    };
    Ok((scan, routes, config))
}

/// The terminal report: the read, the sessions, the model, unmatched paths, validation, warnings,
/// then the TOML.
pub fn render(r: &ModelReport) -> String {
    let mut out = String::new();
    let s = &r.scan;
    let _ = writeln!(
        out,
        "read {} file(s), {} lines ({:.1} MB), {} malformed, format {}",
        s.files.len(),
        s.lines,
        s.bytes as f64 / 1e6,
        s.bad_lines,
        s.format.map_or_else(|| "?".to_owned(), |f| f.to_string())
    );
    for b in &s.bad_samples {
        let _ = writeln!(
            out,
            "  {}:{}: {}: {}",
            b.file.display(),
            b.line,
            b.why,
            b.text
        );
    }
    let k = &r.sessions;
    let _ = writeln!(
        out,
        "sessions by `{}`{}, ending after {} of inactivity: {} sessions from {} lines of known operations ({} without the key)",
        k.key,
        if k.key_is_default {
            " (the default)"
        } else {
            ""
        },
        crate::config::format_duration(std::time::Duration::from_secs_f64(k.gap_s)),
        k.sessions,
        k.matched_lines,
        k.lines_without_key
    );
    let _ = writeln!(
        out,
        "{:.3} sessions/s on average over the log",
        r.sessions_per_sec
    );
    out.push('\n');
    let _ = write!(out, "{}", r.estimate);
    let _ = writeln!(out, "think times: {}", r.estimate.think_test);
    if !r.unmatched.is_empty() {
        out.push_str("\npaths no route matched (add `--route` for the operations among them):\n");
        for g in r.unmatched.iter().take(20) {
            let _ = writeln!(out, "  {:>10}  {}", g.lines, g.group);
        }
        if r.unmatched.len() > 20 || r.unmatched_other_lines > 0 {
            let _ = writeln!(out, "  … and more ({} groups in all)", r.unmatched.len());
        }
    }
    out.push_str("\nvalidation:\n");
    for v in &r.validations {
        let _ = writeln!(out, "  {v}");
    }
    if let Some(c) = &r.config_comparison {
        let outside: Vec<&str> = c
            .probabilities
            .iter()
            .filter(|p| !p.within)
            .map(|p| p.what.as_str())
            .collect();
        if outside.is_empty() {
            let _ = writeln!(
                out,
                "  every probability of the config lies within its interval; largest think-time error {:.1}%",
                c.max_think_error * 100.0
            );
        } else {
            let _ = writeln!(
                out,
                "  config probabilities outside their interval: {}",
                outside.join(", ")
            );
        }
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out.push('\n');
    out.push_str(&r.workload_toml);
    out
}
