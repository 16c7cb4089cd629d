//! `[generator]`: the open-loop generator's limits.

use super::key::{Key, Section};
use super::profile::Look;
use crate::config::source::{
    Cx, Val, duration, integer, integer_in, positive_duration, share, wrong_type,
};
use crate::config::types::{
    FailoverPolicy, GeneratorConfig, GeneratorThreads, MAX_CONNECTIONS, RetryPolicy,
};
use std::time::Duration;
use toml::de::DeValue;

/// `generator.timeout`.
pub(crate) const TIMEOUT: Key<Duration> = Key::new(
    "timeout",
    "per request; later is a transport error",
    positive_duration,
);
/// `generator.max-in-flight`.
pub(crate) const MAX_IN_FLIGHT: Key<i64> = Key::new(
    "max-in-flight",
    "arrivals beyond it are dropped and count as failed requests",
    |cx, v, what| integer_in(cx, v, what, 1..=i64::MAX),
);
/// `generator.max-lag`.
pub(crate) const MAX_LAG: Key<Duration> = Key::new(
    "max-lag",
    "a phase whose pacing lag p99 exceeds this is invalid",
    |cx, v, _| duration(cx, v),
);
/// `generator.max-drop-rate`.
pub(crate) const MAX_DROP_RATE: Key<f64> = Key::new(
    "max-drop-rate",
    "drops past this share make a phase invalid unless the service was the cause (answers past the SLO): then they are its failures",
    |cx, v, what| share(cx, v, what, Some(1.0)),
);
/// `generator.connections`: 0 (on demand) up to [`MAX_CONNECTIONS`].
pub(crate) const CONNECTIONS: Key<i64> = Key::new(
    "connections",
    "a fixed pool of at most this many keep-alive connections, opened before each phase starts",
    |cx, v, what| integer_in(cx, v, what, 0..=MAX_CONNECTIONS as i64),
);

/// `generator.threads`: `"auto"`, or 1 up to the cores this process may run on.
pub(crate) const THREADS: Key<GeneratorThreads> = Key::new(
    "threads",
    "event loops of the generator, each on a thread pinned to a core of its own; \"auto\" runs one per core the target is not given (one: the target is given every other core)",
    threads,
);

/// `generator.retry`: off unless written.
pub(crate) const RETRY: Key<RetryPolicy> = Key::new(
    "retry",
    "retry failed requests: `{ attempts, on, backoff }`; off by default. A retried operation is one logical operation of several attempts",
    super::retry::policy,
);

/// `generator.failover`: [`FailoverPolicy::DEFAULT`] unless written.
pub(crate) const FAILOVER: Key<FailoverPolicy> = Key::new(
    "failover",
    "how sessions move between the replicas of `[target] replicas`: `{ attempts, on, backoff, eject }` or `false`; by default one attempt on the next replica after a connect error, the failed replica ejected for 1s",
    super::failover::policy,
);

/// `[generator]`.
pub(crate) const SECTION: Section = Section {
    name: "generator",
    keys: &[
        &TIMEOUT,
        &MAX_IN_FLIGHT,
        &MAX_LAG,
        &MAX_DROP_RATE,
        &CONNECTIONS,
        &THREADS,
        &RETRY,
        &FAILOVER,
    ],
    check_table: None,
};

/// Pass 2: `[generator]` of one profile.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<GeneratorConfig> {
    let s = &SECTION;
    let config = GeneratorConfig {
        timeout: look.need(cx, s, &TIMEOUT)?,
        max_in_flight: look.need(cx, s, &MAX_IN_FLIGHT)? as usize,
        max_lag: look.need(cx, s, &MAX_LAG)?,
        max_drop_rate: look.need(cx, s, &MAX_DROP_RATE)?,
        connections: look.need(cx, s, &CONNECTIONS)? as usize,
        threads: look.need(cx, s, &THREADS)?,
        retry: look.read(cx, s, &RETRY).flatten(),
        failover: look.read(cx, s, &FAILOVER).flatten(),
    };
    // Each loop has a pool of its own, so a fixed pool is shared out among them: every loop
    // needs one connection at least.
    if let GeneratorThreads::Count(n) = config.threads
        && config.connections > 0
        && config.connections < n
        && let Some(v) = look.get(&[s.name, THREADS.name])
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "`threads = {n}` needs at least {n} connections, one pool per loop, but `connections` is {}",
                config.connections
            ),
            Some(
                "raise `connections` to at least `threads`, or set it to 0 to open connections on demand"
                    .to_owned(),
            ),
        );
        return None;
    }
    // `max-in-flight` is shared out too: every loop needs room for one request at least.
    if let GeneratorThreads::Count(n) = config.threads
        && config.max_in_flight < n
        && let Some(v) = look.get(&[s.name, THREADS.name])
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "`threads = {n}` needs `max-in-flight` of at least {n}, one share per loop, but it is {}",
                config.max_in_flight
            ),
            Some("raise `max-in-flight` to at least `threads`".to_owned()),
        );
        return None;
    }
    Some(config)
}

/// Reads `threads`: `"auto"` or a count of loops, at most the cores this process may run on
/// (each loop is pinned to a core of its own).
fn threads(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<GeneratorThreads> {
    match v.get() {
        DeValue::String(s) if s == "auto" => Some(GeneratorThreads::Auto),
        DeValue::Integer(_) => {
            let n = integer(cx, v, "\"auto\" or an integer (`threads`)")?;
            let cores = available_cores();
            if n < 1 {
                cx.error(
                    v.file,
                    v.span(),
                    format!("{what} must be at least 1, found {n}"),
                    Some("write \"auto\" for one loop per core the target is not given".to_owned()),
                );
                return None;
            }
            match cores {
                Some(cores) if n > cores as i64 => {
                    cx.error(
                        v.file,
                        v.span(),
                        format!(
                            "{what} must be at most {cores}, the cores this process may run on, found {n}"
                        ),
                        Some(
                            "each loop of the generator is pinned to a core of its own; write \"auto\" or fewer threads"
                                .to_owned(),
                        ),
                    );
                    None
                }
                _ => Some(GeneratorThreads::Count(n as usize)),
            }
        }
        _ => {
            wrong_type(cx, v, "\"auto\" or an integer (`threads`)");
            None
        }
    }
}

/// The cores this process may run on (its CPU affinity, which `taskset` and container cpusets
/// set), `None` when the kernel does not say. The engine places the generator's loops on these
/// cores too (`engine::allowed_cores`); validation reads them itself so that config stays
/// upstream of the engine.
pub(crate) fn available_cores() -> Option<usize> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok()?;
    let n = (0..nix::sched::CpuSet::count())
        .filter(|&core| set.is_set(core).unwrap_or(false))
        .count();
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::available_cores;
    use crate::config::GeneratorThreads;
    use crate::config::validate::testing::{one_problem, parse, with_workload};
    use test_case::test_case;

    // Each case is one mistake in `[generator]`; exactly one problem must be reported, at the given place.
    #[test_case("[generator]\nmax-in-flight = 0\n", 7, 17, "`max-in-flight` must be at least 1, found 0", None; "zero in flight")]
    #[test_case("[generator]\nconnections = 300\n", 7, 15, "`connections` must be between 0 and 256, found 300", None; "connections past the cap")]
    #[test_case("[generator]\nthreads = 0\n", 7, 11, "`threads` must be at least 1, found 0", Some("write \"auto\" for one loop per core the target is not given"); "zero threads")]
    #[test_case("[generator]\nthreads = \"many\"\n", 7, 11, "expected \"auto\" or an integer (`threads`), found string \"many\"", None; "threads not auto")]
    #[test_case("[generator]\nthreads = 1\nconnections = 0\n[profile.ci.generator]\nthreads = 2\nconnections = 1\n", 10, 11, "`threads = 2` needs at least 2 connections, one pool per loop, but `connections` is 1", Some("raise `connections` to at least `threads`, or set it to 0 to open connections on demand"); "fewer fixed connections than loops")]
    fn one_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(text, line, col, message, help);
    }

    #[test]
    fn threads_default_to_auto_and_a_count_is_kept() {
        let cfg = parse(&with_workload(""), "default").expect("valid");
        assert_eq!(cfg.generator.threads, GeneratorThreads::Auto);
        let cfg = parse(
            &with_workload("[generator]\nthreads = \"auto\"\n"),
            "default",
        )
        .expect("valid");
        assert_eq!(cfg.generator.threads, GeneratorThreads::Auto);
        let cfg = parse(&with_workload("[generator]\nthreads = 1\n"), "default").expect("valid");
        assert_eq!(cfg.generator.threads, GeneratorThreads::Count(1));
        // As many as the machine lets this process run on is allowed (the target then shares them,
        // which the run warns of); one more is not.
        let cores = available_cores().expect("the kernel tells the affinity");
        let text = format!("[generator]\nthreads = {cores}\n");
        let cfg = parse(&with_workload(&text), "default").expect("valid");
        assert_eq!(cfg.generator.threads, GeneratorThreads::Count(cores));
    }

    #[test]
    fn threads_above_the_cores_available_are_reported_where_they_are_written() {
        let cores = available_cores().expect("the kernel tells the affinity");
        let too_many = cores + 1;
        one_problem(
            &format!("[generator]\nthreads = {too_many}\n"),
            7,
            11,
            &format!(
                "`threads` must be at most {cores}, the cores this process may run on, found {too_many}"
            ),
            Some(
                "each loop of the generator is pinned to a core of its own; write \"auto\" or fewer threads",
            ),
        );
    }

    /// The config hash reads the serialized config: one loop (written or "auto") must serialize
    /// as before the key existed, and more loops must not.
    #[test]
    fn threads_enter_the_serialized_config_only_above_one_loop() {
        let generator = |threads: &str| {
            let text = with_workload(&format!("[generator]\nthreads = {threads}\n"));
            let cfg = parse(&text, "default").expect("valid");
            serde_json::to_value(&cfg.generator).expect("serializes")
        };
        let before = serde_json::to_value(
            &parse(&with_workload(""), "default")
                .expect("valid")
                .generator,
        )
        .expect("serializes");
        assert!(before.get("threads").is_none(), "{before}");
        assert_eq!(generator("\"auto\""), before);
        assert_eq!(generator("1"), before);
        if available_cores().is_some_and(|c| c >= 2) {
            assert_eq!(generator("2")["threads"], 2);
        }
    }
}
