//! `cargo loadgate attack`: fixed-rate open-loop load against one URL (or a workload file), for
//! people and benchmarks. No target is booted and nothing is compared: it sends, measures from the
//! intended send time, and prints what it saw.

use super::exit::ExitCode;
use super::opts::AttackOpts;
use super::render::render_error;
use crate::config::{
    EntryPoint, Expect, GeneratorConfig, GeneratorThreads, OperationConfig, RequestTemplate,
    WorkloadConfig,
};
use crate::engine::{
    CancellationSignal, EngineError, PhaseHooks, PhaseSpec, Placement, allowed_cores,
    enter_realtime, generator_core, is_realtime, pin_current_thread, place, resolve_threads,
    run_phase, run_phase_on_loops,
};
use crate::measure::{LoopMeasurement, PhaseMeasurement, PhaseSummary, Progress};
use crate::report::table;
use serde::Serialize;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The pacing lag p99 past which an attack is invalid (the built-in `generator.max-lag`).
const MAX_LAG: Duration = Duration::from_millis(10);

/// The dropped share of arrivals past which an attack is invalid (`generator.max-drop-rate`).
const MAX_DROP_RATE: f64 = 0.01;

/// How long the reachability check waits for a TCP connection.
const CONNECT_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Why an attack could not run.
#[derive(Debug, thiserror::Error)]
pub enum AttackError {
    /// A flag has a value the attack cannot use.
    #[error("invalid value for `{flag}`: {reason}")]
    InvalidArgument {
        /// The flag, e.g. `--rate`.
        flag: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The URL is not on the loopback interface and `--allow-remote` was not given.
    #[error(
        "refusing to send load to `{url}`, which is not on the loopback interface\nhint: pass --allow-remote if you own that service and mean it"
    )]
    Remote {
        /// The URL.
        url: String,
    },
    /// The workload file could not be read.
    #[error("failed to read workload file {}", path.display())]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The workload file is not a valid configuration.
    #[error("invalid workload file {}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// The diagnostics.
        #[source]
        source: crate::config::ConfigError,
    },
    /// The generator could not be pinned to the core asked for.
    #[error("cannot pin the generator to core {core}")]
    Pin {
        /// The core.
        core: usize,
        /// The kernel's answer.
        #[source]
        source: nix::Error,
    },
    /// Nothing accepts connections at the URL.
    #[error(
        "cannot connect to {addr} (from `{url}`)\nhint: is the service running and listening there?"
    )]
    Unreachable {
        /// The URL.
        url: String,
        /// The address tried.
        addr: SocketAddr,
        /// The connect error.
        #[source]
        source: std::io::Error,
    },
    /// The engine could not run the phase.
    #[error("the attack could not run")]
    Engine(#[source] EngineError),
    /// The async runtime could not be built.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The JSON summary could not be written.
    #[error("failed to write {}", path.display())]
    WriteJson {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl AttackError {
    fn exit_code(&self) -> i32 {
        match self {
            AttackError::InvalidArgument { .. }
            | AttackError::Remote { .. }
            | AttackError::ReadConfig { .. }
            | AttackError::Config { .. }
            | AttackError::Pin { .. } => ExitCode::USAGE,
            AttackError::Engine(EngineError::InvalidUrl { .. } | EngineError::Compile(_)) => {
                ExitCode::USAGE
            }
            AttackError::Unreachable { .. } => ExitCode::OTHER_ERROR,
            AttackError::Engine(_) | AttackError::Runtime(_) | AttackError::WriteJson { .. } => {
                ExitCode::OTHER_ERROR
            }
        }
    }
}

/// The `--json` document: the figures at the top level, then the full summary.
#[derive(Debug, Serialize)]
pub struct AttackSummary {
    /// Requests sent.
    pub requests: u64,
    /// Answers (HTTP responses of any outcome) received per second of the run.
    pub achieved_rate_per_sec: f64,
    /// The offered rate (`--rate`).
    pub offered_rate_per_sec: f64,
    /// Median latency from the intended send time, in ms.
    pub p50_ms: f64,
    /// 90th percentile latency, in ms.
    pub p90_ms: f64,
    /// 99th percentile latency, in ms.
    pub p99_ms: f64,
    /// 99.9th percentile latency, in ms.
    pub p999_ms: f64,
    /// Largest latency, in ms.
    pub max_ms: f64,
    /// Requests without a correct answer.
    pub errors: u64,
    /// Arrivals dropped at the in-flight cap.
    pub dropped: u64,
    /// Pacing lag p99, in ms.
    pub lag_p99_ms: f64,
    /// Largest pacing lag, in ms.
    pub lag_max_ms: f64,
    /// CPU seconds of the generator thread over the run.
    pub cpu_seconds: Option<f64>,
    /// Generator CPU per request sent, in microseconds.
    pub cpu_us_per_request: Option<f64>,
    /// The core the generator was pinned to (the first loop's, with several).
    pub generator_core: Option<usize>,
    /// The generator's event loops (`--threads`).
    pub threads: usize,
    /// Each loop's core, CPU time, busy share and lag, when there were several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loops: Vec<LoopMeasurement>,
    /// Whether the generator's loops ran on every core this process may run on (or on its only
    /// one), which a local target then shares.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub generator_shares_target_cores: bool,
    /// Whether the generator thread ran under `SCHED_FIFO` (`--realtime` granted).
    pub realtime: bool,
    /// Whether the generator kept its schedule (lag and drops within their limits).
    pub valid: bool,
    /// Why it is not valid, if it is not.
    pub invalid_reasons: Vec<String>,
    /// Per operation and in total, with service times and transport errors.
    pub summary: PhaseSummary,
}

impl AttackSummary {
    fn new(m: &PhaseMeasurement, offered: f64, realtime: bool) -> Self {
        let s = m.summary();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        Self {
            requests: s.total.requests,
            achieved_rate_per_sec: s.achieved_rate_per_sec,
            offered_rate_per_sec: offered,
            p50_ms: ms(s.total.p50),
            p90_ms: ms(s.total.p90),
            p99_ms: ms(s.total.p99),
            p999_ms: ms(s.total.p999),
            max_ms: ms(s.total.max),
            errors: s.total.errors,
            dropped: s.dropped,
            lag_p99_ms: ms(s.lag_p99),
            lag_max_ms: ms(s.lag_max),
            cpu_seconds: m.generator_cpu.map(|d| d.as_secs_f64()),
            cpu_us_per_request: s.cpu_us_per_request,
            generator_core: m.generator_core,
            threads: m.loops.len().max(1),
            loops: m.loops.clone(),
            generator_shares_target_cores: m.generator_shares_target_cores,
            realtime,
            valid: s.valid,
            invalid_reasons: m.validity.reasons.iter().map(ToString::to_string).collect(),
            summary: s,
        }
    }
}

/// Runs `cargo loadgate attack` on the calling thread (which it pins to the generator's core)
/// and returns the exit code: 0, 21 when the generator could not keep its schedule, 2 on bad
/// input, 1 when the target cannot be reached, 130 when interrupted.
pub fn run(opts: &AttackOpts) -> i32 {
    match attack(opts) {
        Ok(code) => code,
        Err(err) => {
            eprint!("{}", render_error(&err));
            err.exit_code()
        }
    }
}

/// What to send: the base URL for the engine and the workload.
struct Plan {
    base_url: String,
    workload: WorkloadConfig,
    generator: GeneratorConfig,
    slo_latency: Duration,
}

fn attack(opts: &AttackOpts) -> Result<i32, AttackError> {
    if !(opts.rate.is_finite() && opts.rate > 0.0) {
        return Err(AttackError::InvalidArgument {
            flag: "--rate",
            reason: "must be a positive number".into(),
        });
    }
    if opts.duration.is_zero() {
        return Err(AttackError::InvalidArgument {
            flag: "--duration",
            reason: "must be positive".into(),
        });
    }
    if opts.max_in_flight == 0 {
        return Err(AttackError::InvalidArgument {
            flag: "--max-in-flight",
            reason: "must be at least 1".into(),
        });
    }
    if opts.timeout.is_zero() {
        return Err(AttackError::InvalidArgument {
            flag: "--timeout",
            reason: "must be positive".into(),
        });
    }
    let Some(url) = opts.url.as_deref() else {
        return Err(AttackError::InvalidArgument {
            flag: "--url",
            reason: "is needed, with --config too (as the base URL of the workload's paths)".into(),
        });
    };
    let plan = plan(opts, url)?;
    let placement = placement(opts, &plan.generator)?;
    let addr = resolve(url)?;
    if !addr.ip().is_loopback() && !opts.allow_remote {
        return Err(AttackError::Remote {
            url: url.to_owned(),
        });
    }
    TcpStream::connect_timeout(&addr, CONNECT_CHECK_TIMEOUT).map_err(|source| {
        AttackError::Unreachable {
            url: url.to_owned(),
            addr,
            source,
        }
    })?;

    if let Some(placement) = placement {
        return attack_on_loops(opts, url, plan, &placement);
    }
    let core = opts.cpu.or_else(generator_core);
    if let Some(core) = core {
        pin_current_thread(core).map_err(|source| AttackError::Pin { core, source })?;
    }
    if opts.realtime
        && let Err(err) = enter_realtime()
    {
        eprintln!("warning: --realtime: {err}; the generator runs under the normal scheduler");
    }
    let realtime = is_realtime();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(AttackError::Runtime)?;
    let spec = attack_spec(opts);
    let schedule = spec.schedule(&plan.workload);
    let stop = CancellationSignal::new();
    let measurement = runtime.block_on(async {
        let on_signal = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_signal.cancel();
            }
        });
        let progress = |p: &Progress| print_progress(p);
        let hooks = PhaseHooks {
            progress: &progress,
            ..PhaseHooks::default()
        };
        run_phase(
            &plan.base_url,
            &plan.workload,
            &plan.generator,
            plan.slo_latency,
            &spec,
            &schedule,
            hooks,
            stop.clone(),
        )
        .await
    });
    let measurement = measurement.map_err(AttackError::Engine)?;
    report(opts, url, &measurement, realtime, &stop)
}

/// Where the loops of `--threads N` run, when N (or the config file's `threads`) is above one:
/// the first N cores this process may run on. More than it has, or flags that pin or schedule
/// one loop, are usage errors.
fn placement(
    opts: &AttackOpts,
    generator: &GeneratorConfig,
) -> Result<Option<Placement>, AttackError> {
    let threads = resolve_threads(generator.threads);
    if threads <= 1 {
        return Ok(None);
    }
    let invalid =
        |flag: &'static str, reason: String| AttackError::InvalidArgument { flag, reason };
    if opts.cpu.is_some() {
        return Err(invalid(
            "--cpu",
            format!(
                "pins one loop; {threads} loops (--threads) take the first {threads} cores this process may run on"
            ),
        ));
    }
    if opts.realtime {
        return Err(invalid(
            "--realtime",
            "runs one loop under SCHED_FIFO, and is not supported with more than one (--threads)"
                .to_owned(),
        ));
    }
    if generator.connections > 0 && generator.connections < threads {
        return Err(invalid(
            "--connections",
            format!(
                "{} connections cannot be shared out among {threads} loops (--threads): each needs one",
                generator.connections
            ),
        ));
    }
    place(&allowed_cores(), threads)
        .map(Some)
        .map_err(|e| invalid("--threads", e.to_string()))
}

/// Runs the attack on several loops, one thread pinned to a core each, coordinated from a
/// blocking thread while this thread's runtime waits for Ctrl-C.
fn attack_on_loops(
    opts: &AttackOpts,
    url: &str,
    plan: Plan,
    placement: &Placement,
) -> Result<i32, AttackError> {
    if placement.shared {
        eprintln!(
            "warning: {} loops take every core this process may run on: a target on this machine shares them, and the latencies include it",
            placement.loops.len()
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(AttackError::Runtime)?;
    let spec = attack_spec(opts);
    let schedule = spec.schedule(&plan.workload);
    let stop = CancellationSignal::new();
    let cores = placement.loops.clone();
    let measurement = runtime.block_on(async {
        let on_signal = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_signal.cancel();
            }
        });
        let loops_stop = stop.clone();
        tokio::task::spawn_blocking(move || {
            // The coordinator wakes once a window per loop; it keeps to the first loop's core.
            if let Some(core) = cores.first().copied().flatten() {
                let _ = pin_current_thread(core);
            }
            let progress = |p: &Progress| print_progress(p);
            let hooks = PhaseHooks {
                progress: &progress,
                ..PhaseHooks::default()
            };
            run_phase_on_loops(
                std::slice::from_ref(&plan.base_url),
                &plan.workload,
                &plan.generator,
                plan.slo_latency,
                &spec,
                &schedule,
                &cores,
                hooks,
                loops_stop,
            )
        })
        .await
    });
    let mut measurement = measurement
        .map_err(|e| AttackError::Engine(EngineError::Timer(std::io::Error::other(e))))?
        .map_err(AttackError::Engine)?;
    measurement.generator_shares_target_cores = placement.shared;
    report(opts, url, &measurement, false, &stop)
}

/// The phase an attack runs: `--rate` for `--duration`, no warm-up.
fn attack_spec(opts: &AttackOpts) -> PhaseSpec {
    PhaseSpec {
        name: "attack".to_owned(),
        sessions_per_sec: opts.rate,
        duration: opts.duration,
        warmup: Duration::ZERO,
        seed: opts.seed,
        first_session: 0,
        keep_window_histograms: false,
    }
}

/// Prints the report, writes `--json`, and picks the exit code.
fn report(
    opts: &AttackOpts,
    url: &str,
    measurement: &PhaseMeasurement,
    realtime: bool,
    stop: &CancellationSignal,
) -> Result<i32, AttackError> {
    let summary = AttackSummary::new(measurement, opts.rate, realtime);
    print!("{}", render(&summary, measurement));
    if let Some(path) = &opts.json {
        write_json(path, &summary)?;
    }
    let total = measurement.total();
    if total.counters.sent > 0 && total.counters.transport.connect == total.counters.sent {
        eprintln!("error: every connection to {url} was refused");
        return Ok(ExitCode::OTHER_ERROR);
    }
    if stop.is_cancelled() {
        return Ok(ExitCode::INTERRUPTED);
    }
    Ok(if summary.valid {
        ExitCode::PASS
    } else {
        ExitCode::INVALID_RUN
    })
}

/// Builds the workload: one GET of the URL, or the `--config` file's workload under the URL.
fn plan(opts: &AttackOpts, url: &str) -> Result<Plan, AttackError> {
    let generator = GeneratorConfig {
        timeout: opts.timeout,
        max_in_flight: opts.max_in_flight,
        max_lag: MAX_LAG,
        max_drop_rate: MAX_DROP_RATE,
        connections: usize::from(opts.connections),
        threads: opts.threads.map_or(GeneratorThreads::Auto, |n| {
            GeneratorThreads::Count(usize::from(n))
        }),
        // `attack` measures the URL as it answers: no generator-wide retries (an operation's own
        // `retry` in its `--config` still applies).
        retry: None,
        failover: None,
    };
    if let Some(path) = &opts.config {
        let text = std::fs::read_to_string(path).map_err(|source| AttackError::ReadConfig {
            path: path.clone(),
            source,
        })?;
        let config =
            crate::config::parse_config_str(&text, path, None, "default").map_err(|source| {
                AttackError::Config {
                    path: path.clone(),
                    source,
                }
            })?;
        let slo_latency = config
            .slo
            .latency
            .iter()
            .find(|l| (l.quantile - 0.99).abs() < 1e-9)
            .or(config.slo.latency.last())
            .map_or(opts.timeout, |l| l.limit);
        let generator = GeneratorConfig {
            max_lag: config.generator.max_lag,
            max_drop_rate: config.generator.max_drop_rate,
            // `--connections` when given, else the file's `generator.connections`.
            connections: if opts.connections > 0 {
                generator.connections
            } else {
                config.generator.connections
            },
            // `--threads` when given, else the file's `generator.threads`.
            threads: if opts.threads.is_some() {
                generator.threads
            } else {
                config.generator.threads
            },
            ..generator
        };
        return Ok(Plan {
            base_url: url.to_owned(),
            workload: config.workload,
            generator,
            slo_latency,
        });
    }
    let uri: http::Uri = url.parse().map_err(|_| AttackError::InvalidArgument {
        flag: "--url",
        reason: format!("`{url}` is not a URL"),
    })?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(AttackError::InvalidArgument {
            flag: "--url",
            reason: format!("`{url}` needs a scheme and a host, e.g. http://127.0.0.1:8080/"),
        });
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let operation = OperationConfig {
        name: "GET".to_owned(),
        request: RequestTemplate {
            method: "GET".to_owned(),
            path,
            headers: Vec::new(),
            body: None,
        },
        // Any 2xx is a correct answer.
        expect: Expect::default(),
        capture: Vec::new(),
        next: Vec::new(),
        gate: false,
        retry: crate::config::OperationRetry::Inherit,
        idempotent: false,
    };
    Ok(Plan {
        base_url: format!("{scheme}://{authority}"),
        workload: WorkloadConfig {
            seed: opts.seed,
            sessions_per_sec: opts.rate,
            entry: vec![EntryPoint {
                operation: 0,
                p: 1.0,
            }],
            operations: vec![operation],
        },
        generator,
        slo_latency: opts.timeout,
    })
}

/// The first address of the URL's host (IP literals need no resolver).
fn resolve(url: &str) -> Result<SocketAddr, AttackError> {
    let invalid = |reason: String| AttackError::InvalidArgument {
        flag: "--url",
        reason,
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|_| invalid(format!("`{url}` is not a URL")))?;
    if uri.scheme_str() != Some("http") {
        return Err(invalid(format!("`{url}` must start with http:// (no TLS)")));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| invalid(format!("`{url}` has no host")))?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(80);
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| invalid(format!("cannot resolve the host of `{url}`")))
}

fn print_progress(p: &Progress) {
    let window = p.window.as_ref().map_or_else(String::new, |w| {
        format!(
            ", {:.0} req/s, p99 {:.2} ms",
            w.achieved_rate_per_sec(),
            w.p99.as_secs_f64() * 1e3
        )
    });
    eprintln!(
        "{:>5.1}s: {} sent, {} in flight, {} dropped{window}",
        p.elapsed.as_secs_f64(),
        p.sent,
        p.in_flight,
        p.dropped
    );
}

/// The terminal report: latency from the intended send time, then the generator's own health.
fn render(s: &AttackSummary, m: &PhaseMeasurement) -> String {
    let ms = |v: f64| format!("{v:.3}");
    let mut out = String::new();
    out.push_str("latency from the intended send time (ms)\n");
    let mut rows = Vec::new();
    for op in s.summary.operations.iter().chain(
        // A total row only when there is more than one operation.
        (s.summary.operations.len() > 1).then_some(&s.summary.total),
    ) {
        let d = |d: Duration| ms(d.as_secs_f64() * 1e3);
        rows.push(vec![
            op.name.clone(),
            op.requests.to_string(),
            op.errors.to_string(),
            d(op.p50),
            d(op.p90),
            d(op.p99),
            d(op.p999),
            d(op.max),
        ]);
    }
    out.push_str(&table(
        &[
            "operation",
            "requests",
            "errors",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
        ],
        &rows,
    ));
    out.push('\n');
    let total = m.total();
    let c = &total.counters;
    let mut errors = Vec::new();
    for (status, n) in &c.http_error {
        errors.push(format!("{n} × HTTP {status}"));
    }
    for (name, n) in [
        ("wrong answer", c.wrong_answer),
        ("connect", c.transport.connect),
        ("reset", c.transport.reset),
        ("timeout", c.transport.timeout),
        ("other", c.transport.other),
        ("dropped at the in-flight cap", c.dropped),
    ] {
        if n > 0 {
            errors.push(format!("{n} × {name}"));
        }
    }
    let error_text = if errors.is_empty() {
        "0".to_owned()
    } else {
        format!("{} ({})", s.errors, errors.join(", "))
    };
    let cpu = match (s.cpu_seconds, s.cpu_us_per_request) {
        (Some(secs), Some(per)) => format!("{secs:.3} s, {per:.1} µs per request"),
        (Some(secs), None) => format!("{secs:.3} s"),
        _ => "unknown".to_owned(),
    };
    let mut core = if s.loops.len() > 1 {
        let cores: Vec<String> = s
            .loops
            .iter()
            .map(|l| l.core.map_or_else(|| "-".to_owned(), |c| c.to_string()))
            .collect();
        format!("{} loops on cores {}", s.loops.len(), cores.join(", "))
    } else {
        s.generator_core
            .map_or_else(|| "not pinned".to_owned(), |c| format!("core {c}"))
    };
    if s.realtime {
        core.push_str(", SCHED_FIFO");
    }
    let lines = [
        (
            "achieved rate",
            format!(
                "{:.1} req/s (offered {:.1})",
                s.achieved_rate_per_sec, s.offered_rate_per_sec
            ),
        ),
        ("errors", error_text),
        (
            "pacing lag",
            format!("p99 {} ms, max {} ms", ms(s.lag_p99_ms), ms(s.lag_max_ms)),
        ),
        (
            "dropped",
            format!(
                "{} ({:.3}% of arrivals)",
                s.dropped,
                s.summary.drop_rate * 100.0
            ),
        ),
        ("generator cpu", format!("{cpu}, {core}")),
    ];
    for (k, v) in lines {
        out.push_str(&format!("{k:<14} {v}\n"));
    }
    if !s.valid {
        out.push_str(
            "INVALID: the generator could not keep its schedule; these figures prove nothing\n",
        );
        for reason in &s.invalid_reasons {
            out.push_str(&format!("  - {reason}\n"));
        }
    }
    if let Some(reason) = &m.stopped {
        out.push_str(&format!("stopped early: {reason}\n"));
    }
    out
}

/// Writes the JSON next to its final name, then renames it over, so a reader never sees half.
fn write_json(path: &Path, summary: &AttackSummary) -> Result<(), AttackError> {
    let fail = |source| AttackError::WriteJson {
        path: path.to_owned(),
        source,
    };
    let mut text =
        serde_json::to_string_pretty(summary).map_err(|e| fail(std::io::Error::other(e)))?;
    text.push('\n');
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{FinishInfo, Outcome, PhaseRecorder, TransportErrorKind};
    use test_case::test_case;

    fn opts(url: &str) -> AttackOpts {
        AttackOpts {
            url: Some(url.to_owned()),
            config: None,
            rate: 100.0,
            duration: Duration::from_millis(300),
            seed: 42,
            timeout: Duration::from_secs(1),
            max_in_flight: 100,
            connections: 0,
            threads: None,
            cpu: None,
            realtime: false,
            json: None,
            allow_remote: false,
        }
    }

    #[test_case(|o: &mut AttackOpts| o.rate = 0.0, "--rate" ; "zero rate")]
    #[test_case(|o: &mut AttackOpts| o.rate = f64::NAN, "--rate" ; "nan rate")]
    #[test_case(|o: &mut AttackOpts| o.duration = Duration::ZERO, "--duration" ; "zero duration")]
    #[test_case(|o: &mut AttackOpts| o.max_in_flight = 0, "--max-in-flight" ; "no in-flight")]
    #[test_case(|o: &mut AttackOpts| o.url = Some("ftp://127.0.0.1/".into()), "--url" ; "wrong scheme")]
    fn bad_input_is_a_usage_error(change: fn(&mut AttackOpts), flag: &str) {
        let mut o = opts("http://127.0.0.1:9/");
        change(&mut o);
        let err = attack(&o).expect_err("refused");
        assert!(
            matches!(&err, AttackError::InvalidArgument { flag: f, .. } if *f == flag),
            "{err}"
        );
        assert_eq!(err.exit_code(), ExitCode::USAGE);
    }

    #[test]
    fn a_remote_url_is_refused_without_allow_remote_and_nothing_is_sent() {
        // A TEST-NET address: refused before any connection is tried.
        let err = attack(&opts("http://192.0.2.1:80/")).expect_err("refused");
        assert!(matches!(err, AttackError::Remote { .. }));
        assert_eq!(err.exit_code(), ExitCode::USAGE);
        insta::assert_snapshot!(render_error(&err), @r"
        error: refusing to send load to `http://192.0.2.1:80/`, which is not on the loopback interface
        hint: pass --allow-remote if you own that service and mean it
        ");
    }

    #[test]
    fn an_unreachable_target_exits_1() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("addr")
            .port();
        assert_eq!(
            run(&opts(&format!("http://127.0.0.1:{port}/"))),
            ExitCode::OTHER_ERROR
        );
    }

    #[test]
    fn one_get_keeps_the_path_and_query_and_splits_off_the_base() {
        let p = plan(
            &opts("http://localhost:8080/a/b?x=1"),
            "http://localhost:8080/a/b?x=1",
        )
        .expect("plan");
        assert_eq!(p.base_url, "http://localhost:8080");
        assert_eq!(p.workload.operations[0].request.path, "/a/b?x=1");
        assert_eq!(p.workload.operations.len(), 1);
        assert!(p.workload.operations[0].next.is_empty());
        assert_eq!(
            resolve("http://localhost:8080/")
                .map(|a| a.ip().is_loopback())
                .ok(),
            Some(true)
        );
    }

    #[test]
    fn connections_come_from_the_flag_else_from_the_config_file() {
        let mut o = opts("http://127.0.0.1:8080/");
        o.connections = 5;
        let p = plan(&o, "http://127.0.0.1:8080/").expect("plan");
        assert_eq!(p.generator.connections, 5);

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("loadgate.toml");
        std::fs::write(
            &path,
            format!(
                "{}\n[generator]\nconnections = 7\n",
                crate::config::MINIMAL_CONFIG
            ),
        )
        .expect("write");
        let mut o = opts("http://127.0.0.1:8080/");
        o.config = Some(path);
        let from_file = plan(&o, "http://127.0.0.1:8080").expect("plan");
        assert_eq!(from_file.generator.connections, 7);
        o.connections = 3;
        let from_flag = plan(&o, "http://127.0.0.1:8080").expect("plan");
        assert_eq!(from_flag.generator.connections, 3);
    }

    #[test]
    fn a_missing_config_file_is_a_usage_error() {
        let mut o = opts("http://127.0.0.1:9/");
        o.config = Some(PathBuf::from("/nonexistent/loadgate.toml"));
        let err = attack(&o).expect_err("refused");
        assert!(matches!(err, AttackError::ReadConfig { .. }));
        assert_eq!(err.exit_code(), ExitCode::USAGE);
    }

    fn measurement() -> PhaseMeasurement {
        let ms = Duration::from_millis;
        let mut r = PhaseRecorder::new(
            &["GET".to_owned()],
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(1),
        );
        for i in 0..100u64 {
            let t = ms(i * 10);
            r.arrival(t);
            r.sent(0, t, t + Duration::from_micros(50));
            let outcome = if i == 7 {
                Outcome::HttpError(503)
            } else {
                Outcome::Ok
            };
            r.completed(
                0,
                t,
                t + Duration::from_micros(50),
                t + ms(1 + i % 5),
                &outcome,
            );
        }
        r.arrival(ms(999));
        r.dropped(0, ms(999));
        r.completed(
            0,
            ms(990),
            ms(990),
            ms(991),
            &Outcome::Transport(TransportErrorKind::Timeout),
        );
        r.finish(FinishInfo {
            name: "attack".into(),
            seed: 42,
            sessions_per_sec: 100.0,
            arrivals_end: ms(1000),
            end: ms(1000),
            max_lag: ms(10),
            max_drop_rate: 0.001,
            generator_cpu: Some(ms(2)),
            generator_core: Some(0),
            stopped: None,
        })
    }

    #[test]
    fn report_reads_well() {
        let m = measurement();
        let s = AttackSummary::new(&m, 100.0, false);
        insta::assert_snapshot!(render(&s, &m));
    }

    #[test]
    fn json_has_the_top_level_figures() {
        let m = measurement();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.json");
        write_json(&path, &AttackSummary::new(&m, 100.0, false)).expect("writes");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("reads")).expect("json");
        for key in [
            "requests",
            "achieved_rate_per_sec",
            "p50_ms",
            "p90_ms",
            "p99_ms",
            "p999_ms",
            "max_ms",
            "errors",
            "dropped",
            "cpu_seconds",
            "lag_p99_ms",
            "valid",
            "cpu_us_per_request",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(
            v["requests"], 101,
            "100 sent and 1 dropped: every request that came due"
        );
        assert_eq!(v["errors"], 3, "the drop is an error");
        assert_eq!(v["valid"], false);
        assert!(!path.with_extension("json.tmp").exists());
    }

    #[test]
    fn threads_parse_from_the_command_line_and_zero_is_refused() {
        let attack_opts = |args: &[&str]| {
            let argv = [
                "cargo-loadgate",
                "attack",
                "--url",
                "http://127.0.0.1:9/",
                "--rate",
                "1",
            ]
            .iter()
            .chain(["--duration", "1s"].iter())
            .chain(args)
            .copied()
            .collect::<Vec<_>>();
            crate::cli::parse_args(argv).map(|crate::cli::CargoOpts::Loadgate(o)| match o.command {
                crate::cli::Command::Attack(a) => a.threads,
                other => panic!("not attack: {other:?}"),
            })
        };
        assert_eq!(attack_opts(&[]).expect("parses"), None);
        assert_eq!(attack_opts(&["--threads", "2"]).expect("parses"), Some(2));
        let err = attack_opts(&["--threads", "0"]).expect_err("refused");
        assert_eq!(err.exit_code(), ExitCode::USAGE);
    }

    #[test]
    fn threads_above_the_cores_available_are_a_usage_error() {
        let cores = allowed_cores().len();
        let mut o = opts("http://127.0.0.1:9/");
        o.threads = Some(u16::try_from(cores + 1).expect("a few cores"));
        let err = attack(&o).expect_err("refused");
        assert!(
            matches!(
                &err,
                AttackError::InvalidArgument {
                    flag: "--threads",
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(err.exit_code(), ExitCode::USAGE);
        assert!(
            err.to_string()
                .contains(&format!("may run on {cores} core")),
            "{err}"
        );
    }

    #[test_case(|o: &mut AttackOpts| o.cpu = Some(0), "--cpu" ; "cpu pins one loop")]
    #[test_case(|o: &mut AttackOpts| o.realtime = true, "--realtime" ; "realtime is one loop's")]
    #[test_case(|o: &mut AttackOpts| o.connections = 1, "--connections" ; "a pool smaller than the loops")]
    fn flags_of_one_loop_are_refused_with_several(change: fn(&mut AttackOpts), flag: &str) {
        let mut o = opts("http://127.0.0.1:9/");
        o.threads = Some(2);
        change(&mut o);
        let err = attack(&o).expect_err("refused");
        assert!(
            matches!(&err, AttackError::InvalidArgument { flag: f, .. } if *f == flag),
            "{err}"
        );
        assert_eq!(err.exit_code(), ExitCode::USAGE);
    }

    #[test]
    fn threads_come_from_the_flag_else_from_the_config_file() {
        let o = opts("http://127.0.0.1:8080/");
        let p = plan(&o, "http://127.0.0.1:8080/").expect("plan");
        assert_eq!(p.generator.threads, GeneratorThreads::Auto);

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("loadgate.toml");
        std::fs::write(
            &path,
            format!(
                "{}\n[generator]\nthreads = 1\n",
                crate::config::MINIMAL_CONFIG
            ),
        )
        .expect("write");
        let mut o = opts("http://127.0.0.1:8080/");
        o.config = Some(path);
        let from_file = plan(&o, "http://127.0.0.1:8080").expect("plan");
        assert_eq!(from_file.generator.threads, GeneratorThreads::Count(1));
        o.threads = Some(2);
        let from_flag = plan(&o, "http://127.0.0.1:8080").expect("plan");
        assert_eq!(from_flag.generator.threads, GeneratorThreads::Count(2));
    }
}
