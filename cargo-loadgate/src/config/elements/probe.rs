//! `[[probe]]`: what a dependency or the service is doing during the run (issue 16, "Probes"). A
//! top-level array of tables beside `[[dependency]]`: a `postgres` probe watches a PostgreSQL the
//! config declares; a `prometheus` probe scrapes named series from the target's own `/metrics`, a
//! dependency's, or a URL on loopback. A probe follows its dependency into the profiles that boot
//! it. `targets::probe` samples it, `compare::probe` judges its `limits`. Every problem is
//! reported at once.

use super::key::{Element, Key, names};
use crate::config::source::{
    Cx, Tbl, Val, array, array_of_tables, keyword, number, string, suggest,
};
use crate::config::types::{DependencyConfig, DependencySource, Preset, ProbeConfig, ProbeKind};
use crate::measure::exposition::Selector;
use std::collections::BTreeMap;

/// The top-level key.
pub(crate) const PROBE: &str = "probe";

/// Where a `prometheus` probe scrapes when it names neither `path` nor `url`.
pub const DEFAULT_METRICS_PATH: &str = "/metrics";

/// A `prometheus` probe's name when it names none and watches no dependency.
const DEFAULT_PROMETHEUS_NAME: &str = "metrics";

/// `probe.name`.
pub(crate) const NAME: Key<String> = Key::new(
    "name",
    "its name in the result and reports; default: the dependency's name (`metrics` for a \
     `prometheus` probe of the target or a URL)",
    |cx, v, _| {
        let s = string(cx, v, "a string (the probe's name)")?;
        if !crate::config::source::is_entry_name(s) {
            cx.error(
                v.file,
                v.span(),
                format!("probe name {s:?} is not a name"),
                Some("use letters, digits, `_` and `-`, e.g. \"db\"".to_owned()),
            );
            return None;
        }
        Some(s.to_owned())
    },
);
/// `probe.kind`.
pub(crate) const KIND: Key<ProbeKind> = Key::new(
    "kind",
    "`postgres`: `pg_stat_activity` and `pg_stat_database` of a `postgres` dependency, once a \
     second; `prometheus`: the named `series` of a `/metrics` page, once a second",
    |cx, v, _| {
        keyword(
            cx,
            v,
            &[
                ("postgres", ProbeKind::Postgres),
                ("prometheus", ProbeKind::Prometheus),
            ],
            "unknown probe kind",
            "`probe.kind`",
        )
    },
);
/// `probe.dependency`.
pub(crate) const DEPENDENCY: Key<String> = Key::new(
    "dependency",
    "the `[[dependency]]` it watches, by name (a `prometheus` probe: the one it scrapes; default \
     the target)",
    |cx, v, _| string(cx, v, "a string (a dependency's name)").map(str::to_owned),
);
/// `probe.path`.
pub(crate) const PATH: Key<String> = Key::new(
    "path",
    "`prometheus`: the path scraped on the target (or its `dependency`); default \"/metrics\"",
    |cx, v, _| {
        let s = string(cx, v, "a string (a path, e.g. \"/metrics\")")?;
        if !s.starts_with('/') {
            cx.error(
                v.file,
                v.span(),
                format!("`probe.path` {s:?} does not start with `/`"),
                Some("write the path on the service, e.g. \"/metrics\"".to_owned()),
            );
            return None;
        }
        Some(s.to_owned())
    },
);
/// `probe.url`.
pub(crate) const URL: Key<String> = Key::new(
    "url",
    "`prometheus`: the page scraped, on loopback, instead of the target's `path`",
    |cx, v, _| {
        let s = string(
            cx,
            v,
            "a string (a URL, e.g. \"http://127.0.0.1:9100/metrics\")",
        )?;
        let loopback = s.starts_with("http://")
            && crate::config::url_host_port(s)
                .is_some_and(|(host, _)| crate::targets::is_loopback_host(&host));
        if !loopback {
            cx.error(
                v.file,
                v.span(),
                format!("`probe.url` {s:?} is not an http:// URL on loopback"),
                Some(
                    "a probe scrapes on this machine, e.g. \"http://127.0.0.1:9100/metrics\"; \
                     the target's own page is `path = \"/metrics\"`"
                        .to_owned(),
                ),
            );
            return None;
        }
        Some(s.to_owned())
    },
);
/// `probe.series`.
pub(crate) const SERIES: Key<Vec<String>> = Key::new(
    "series",
    "`prometheus`: the series kept, each `name` or `name{label=\"value\"}` (the samples it \
     matches are summed; a counter's, by its `# TYPE` or a `_total` name, is kept as a rate)",
    |cx, v, _| {
        let items = array(cx, v, "an array of series, e.g. [\"pool_waiting\"]")?;
        let mut out = Vec::new();
        let mut ok = true;
        for item in items {
            let Some(s) = string(cx, item, "a string (a series, e.g. \"pool_waiting\")") else {
                ok = false;
                continue;
            };
            match Selector::parse(s) {
                Ok(_) if out.iter().any(|o: &String| o == s) => {
                    cx.error(
                        item.file,
                        item.span(),
                        format!("series `{s}` is named twice"),
                        None,
                    );
                    ok = false;
                }
                Ok(_) => out.push(s.to_owned()),
                Err(why) => {
                    cx.error(
                        item.file,
                        item.span(),
                        format!("`{s}` is not a series: {why}"),
                        Some(
                            "write a metric name, with labels to match if need be: \
                             `http_requests_total{route=\"/login\"}`"
                                .to_owned(),
                        ),
                    );
                    ok = false;
                }
            }
        }
        if ok && out.is_empty() {
            cx.error(
                v.file,
                v.span(),
                "`probe.series` is empty".to_owned(),
                Some("name the series to keep, e.g. [\"pool_waiting\"]".to_owned()),
            );
            return None;
        }
        ok.then_some(out)
    },
);
/// `probe.limits`.
pub(crate) const LIMITS: Key<BTreeMap<String, f64>> = Key::new(
    "limits",
    "gate checks, series = highest allowed: a gauge's largest sample, a counter's increase over \
     the run, e.g. `{ deadlocks = 0, connections_waiting = 5 }`",
    limits,
);

/// The keys of one entry.
pub(crate) const KEYS: &[&dyn Element] =
    &[&NAME, &KIND, &DEPENDENCY, &PATH, &URL, &SERIES, &LIMITS];

/// The limits' values; the series they name are checked once the kind is known
/// ([`check_limit_names`]).
fn limits(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<BTreeMap<String, f64>> {
    let Some(t) = v.as_table() else {
        crate::config::source::wrong_type(cx, v, "a table like { deadlocks = 0 }");
        return None;
    };
    let mut out = BTreeMap::new();
    let mut ok = true;
    for (key, item) in t.iter() {
        let item = Val {
            file: v.file,
            v: item,
        };
        let name: &str = key.get_ref().as_ref();
        match number(cx, item, "a number (the highest allowed value)") {
            Some(x) if x >= 0.0 => {
                out.insert(name.to_owned(), x);
            }
            Some(_) => {
                cx.error(
                    item.file,
                    item.span(),
                    format!("the limit of `{name}` is negative"),
                    Some("a limit is the highest allowed value, 0 or more".to_owned()),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Reports each limit of `limits` (the table at `v`) naming a series `kind` does not keep (`kept`).
fn check_limit_names(cx: &Cx<'_>, v: Val<'_>, kind: ProbeKind, kept: &[&str]) {
    let Some(t) = v.as_table() else {
        return;
    };
    for (key, _) in t.iter() {
        let name: &str = key.get_ref().as_ref();
        if kept.contains(&name) {
            continue;
        }
        let (message, help) = match kind {
            ProbeKind::Postgres => (
                format!(
                    "`probe.limits` names series `{name}`, which a postgres probe does not have"
                ),
                match suggest(name, kept.iter().copied()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!(
                        "its series: {}",
                        kept.iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
            ),
            ProbeKind::Prometheus => (
                format!("`probe.limits` names series `{name}`, which `probe.series` does not keep"),
                match suggest(name, kept.iter().copied()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => "add it to `series`, as written in `limits`".to_owned(),
                },
            ),
        };
        cx.error(v.file, key.span(), message, Some(help));
    }
}

/// Reads every `[[probe]]` of `root` (the user's top level), checking each against the declared
/// `dependencies`: a `postgres` probe's dependency is declared and is a PostgreSQL, a
/// `prometheus` probe's (if any) is declared, each kind has only its own keys, and names are
/// unique.
pub(crate) fn read(
    cx: &Cx<'_>,
    root: &Tbl<'_>,
    prefix: &str,
    dependencies: &[DependencyConfig],
) -> Vec<ProbeConfig> {
    let mut probes: Vec<ProbeConfig> = Vec::new();
    for (index, item) in array_of_tables(cx, root, PROBE, prefix)
        .into_iter()
        .enumerate()
    {
        let label = format!("entry {} of `[[{prefix}{PROBE}]]`", index + 1);
        let Some(t) = Tbl::of(cx, item, label.clone(), "a table (a probe)") else {
            continue;
        };
        t.check_keys(cx, &names(KEYS));
        let p = PROBE;
        let kind = t
            .required(
                cx,
                KIND.name,
                &label,
                "add kind = \"postgres\" or kind = \"prometheus\"",
            )
            .and_then(|v| KIND.read(cx, v, p));
        let dependency_v = match kind {
            Some(ProbeKind::Postgres) => t.required(
                cx,
                DEPENDENCY.name,
                &label,
                "add the name of the [[dependency]] it watches, e.g. dependency = \"db\"",
            ),
            _ => t.get(DEPENDENCY.name),
        };
        let dependency = dependency_v.and_then(|v| DEPENDENCY.read(cx, v, p));
        if let (Some(name), Some(v)) = (&dependency, dependency_v) {
            match dependencies.iter().find(|d| &d.name == name) {
                None => {
                    let declared = dependencies.iter().map(|d| d.name.as_str());
                    let help = match suggest(name, declared.clone()) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None => format!("declare it with [[dependency]] name = \"{name}\""),
                    };
                    cx.error(
                        v.file,
                        v.span(),
                        format!(
                            "`probe.dependency` names dependency `{name}`, which is not declared"
                        ),
                        Some(help),
                    );
                }
                Some(d) if kind == Some(ProbeKind::Postgres) && !is_postgres(&d.source) => cx
                    .error(
                        v.file,
                        v.span(),
                        format!(
                            "a postgres probe watches dependency `{name}`, which is not a \
                             PostgreSQL"
                        ),
                        Some(
                            "give the dependency preset = \"postgres\", or a postgres:// url"
                                .to_owned(),
                        ),
                    ),
                Some(_) => {}
            }
        }
        // Each kind's own keys.
        let only_prometheus = [PATH.name, URL.name, SERIES.name];
        if kind == Some(ProbeKind::Postgres) {
            for key in only_prometheus {
                if let Some(span) = t.key_span(key) {
                    cx.error(
                        t.file,
                        span,
                        format!("`probe.{key}` applies to `prometheus` probes"),
                        Some("a postgres probe reads its dependency's statistics views".to_owned()),
                    );
                }
            }
        }
        let path = t.get(PATH.name).and_then(|v| PATH.read(cx, v, p));
        let url = t.get(URL.name).and_then(|v| URL.read(cx, v, p));
        if kind == Some(ProbeKind::Prometheus)
            && let Some(span) = t.key_span(URL.name)
        {
            for other in [PATH.name, DEPENDENCY.name] {
                if t.get(other).is_some() {
                    cx.error(
                        t.file,
                        span.clone(),
                        format!("`probe.url` and `probe.{other}` both say where to scrape"),
                        Some(
                            "give `url` alone, or `path` (on the target, or on `dependency`)"
                                .to_owned(),
                        ),
                    );
                }
            }
        }
        let series_v = match kind {
            Some(ProbeKind::Prometheus) => t.required(
                cx,
                SERIES.name,
                &label,
                "name the series to keep, e.g. series = [\"pool_waiting\"]",
            ),
            _ => None,
        };
        let series = series_v.and_then(|v| SERIES.read(cx, v, p));
        let name = t.get(NAME.name).and_then(|v| NAME.read(cx, v, p));
        let limits_v = t.get(LIMITS.name);
        let limits = limits_v
            .and_then(|v| LIMITS.read(cx, v, p))
            .unwrap_or_default();
        if let (Some(v), Some(kind)) = (limits_v, kind) {
            match kind {
                ProbeKind::Postgres => {
                    let kept: Vec<&str> = crate::measure::probe::POSTGRES_SERIES
                        .iter()
                        .map(|s| s.name)
                        .collect();
                    check_limit_names(cx, v, kind, &kept);
                }
                // Unreadable series were reported already.
                ProbeKind::Prometheus => {
                    if let Some(series) = &series {
                        let kept: Vec<&str> = series.iter().map(String::as_str).collect();
                        check_limit_names(cx, v, kind, &kept);
                    }
                }
            }
        }
        let Some(kind) = kind else {
            continue;
        };
        if kind == ProbeKind::Postgres && dependency.is_none() {
            continue;
        }
        let name = name.unwrap_or_else(|| {
            dependency
                .clone()
                .unwrap_or_else(|| DEFAULT_PROMETHEUS_NAME.to_owned())
        });
        if let Some(first) = probes.iter().find(|q| q.name == name) {
            cx.error(
                t.file,
                t.key_span(NAME.name).unwrap_or_else(|| t.span.clone()),
                format!("probe `{name}` is declared twice"),
                Some(format!(
                    "the first is at {}; give each its own `name`",
                    first.location
                )),
            );
            continue;
        }
        let prometheus = kind == ProbeKind::Prometheus;
        probes.push(ProbeConfig {
            name,
            kind,
            dependency,
            path: (prometheus && url.is_none())
                .then(|| path.unwrap_or_else(|| DEFAULT_METRICS_PATH.to_owned())),
            url: url.filter(|_| prometheus),
            series: series.unwrap_or_default(),
            limits,
            location: {
                let (line, col) = cx.files[t.file].position(t.span.start);
                format!("{}:{line}:{col}", cx.files[t.file].path.display())
            },
        });
    }
    probes
}

fn is_postgres(source: &DependencySource) -> bool {
    match source {
        DependencySource::Preset { preset, .. } => matches!(preset, Preset::Postgres),
        DependencySource::Url { url } => {
            url.starts_with("postgres://") || url.starts_with("postgresql://")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate::testing::{parse, with_workload};
    use indoc::indoc;

    #[test]
    fn a_probe_is_read_with_its_limits_and_the_dependency_name_as_its_name() {
        let text = with_workload(indoc! {r#"
            [[dependency]]
            name = "db"
            preset = "postgres"

            [[probe]]
            kind = "postgres"
            dependency = "db"
            limits = { deadlocks = 0, connections_waiting = 5 }
        "#});
        let config = parse(&text, "default").expect("valid");
        assert_eq!(config.probes.len(), 1);
        let p = &config.probes[0];
        assert_eq!(p.name, "db");
        assert_eq!(p.kind, ProbeKind::Postgres);
        assert_eq!(p.dependency.as_deref(), Some("db"));
        assert_eq!(
            p.limits,
            BTreeMap::from([
                ("connections_waiting".to_owned(), 5.0),
                ("deadlocks".to_owned(), 0.0)
            ])
        );
        assert_eq!(p.location, "loadgate.toml:10:1");
    }

    #[test]
    fn every_problem_of_the_probes_is_reported_at_once() {
        let text = with_workload(indoc! {r#"
            [[dependency]]
            name = "db"
            preset = "postgres"

            [[dependency]]
            name = "cache"
            command = "redis-server"

            [[probe]]
            kind = "postgres"
            dependency = "dbb"

            [[probe]]
            kind = "statsd"
            dependency = "db"

            [[probe]]
            kind = "postgres"
            dependency = "cache"
            limits = { deadlock = 0, connections_idle = -1 }

            [[probe]]
            dependency = "db"
            frequency = "1s"

            [[probe]]
            kind = "prometheus"
            dependency = "nowhere"
            url = "http://10.0.0.1:9100/metrics"
            series = ["ok_total", "bad{x=1}", "ok_total"]

            [[probe]]
            kind = "prometheus"
            series = []
            path = "metrics"

            [[probe]]
            name = "pool"
            kind = "prometheus"
            series = ["pool_waiting"]
            limits = { pool_waitin = 1, other = 2 }

            [[probe]]
            name = "pg"
            kind = "postgres"
            dependency = "db"
            series = ["x"]
        "#});
        let err = parse(&text, "default").expect_err("invalid");
        let got: Vec<(usize, usize, &str, Option<&str>)> = err
            .diagnostics()
            .iter()
            .map(|d| (d.line, d.col, d.message.as_str(), d.help.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    16,
                    14,
                    "`probe.dependency` names dependency `dbb`, which is not declared",
                    Some("did you mean `db`?")
                ),
                (
                    19,
                    8,
                    "unknown probe kind `statsd` in `probe.kind`",
                    Some("one of `postgres`, `prometheus`")
                ),
                (
                    24,
                    14,
                    "a postgres probe watches dependency `cache`, which is not a PostgreSQL",
                    Some("give the dependency preset = \"postgres\", or a postgres:// url")
                ),
                (
                    25,
                    12,
                    "`probe.limits` names series `deadlock`, which a postgres probe does not have",
                    Some("did you mean `deadlocks`?")
                ),
                (
                    25,
                    45,
                    "the limit of `connections_idle` is negative",
                    Some("a limit is the highest allowed value, 0 or more")
                ),
                (
                    27,
                    1,
                    "entry 4 of `[[probe]]` has no `kind`",
                    Some("add kind = \"postgres\" or kind = \"prometheus\"")
                ),
                (
                    29,
                    1,
                    "unknown key `frequency` in entry 4 of `[[probe]]`",
                    Some(
                        "expected one of `name`, `kind`, `dependency`, `path`, `url`, `series`, \
                         `limits`"
                    )
                ),
                (
                    33,
                    14,
                    "`probe.dependency` names dependency `nowhere`, which is not declared",
                    Some("declare it with [[dependency]] name = \"nowhere\"")
                ),
                (
                    34,
                    1,
                    "`probe.url` and `probe.dependency` both say where to scrape",
                    Some("give `url` alone, or `path` (on the target, or on `dependency`)")
                ),
                (
                    34,
                    7,
                    "`probe.url` \"http://10.0.0.1:9100/metrics\" is not an http:// URL on loopback",
                    Some(
                        "a probe scrapes on this machine, e.g. \"http://127.0.0.1:9100/metrics\"; \
                         the target's own page is `path = \"/metrics\"`"
                    )
                ),
                (
                    35,
                    23,
                    "`bad{x=1}` is not a series: expected a quoted label value at column 7",
                    Some(
                        "write a metric name, with labels to match if need be: \
                         `http_requests_total{route=\"/login\"}`"
                    )
                ),
                (35, 35, "series `ok_total` is named twice", None),
                (
                    39,
                    10,
                    "`probe.series` is empty",
                    Some("name the series to keep, e.g. [\"pool_waiting\"]")
                ),
                (
                    40,
                    8,
                    "`probe.path` \"metrics\" does not start with `/`",
                    Some("write the path on the service, e.g. \"/metrics\"")
                ),
                (
                    46,
                    12,
                    "`probe.limits` names series `pool_waitin`, which `probe.series` does not keep",
                    Some("did you mean `pool_waiting`?")
                ),
                (
                    46,
                    29,
                    "`probe.limits` names series `other`, which `probe.series` does not keep",
                    Some("add it to `series`, as written in `limits`")
                ),
                (
                    52,
                    1,
                    "`probe.series` applies to `prometheus` probes",
                    Some("a postgres probe reads its dependency's statistics views")
                ),
            ],
            "{err}"
        );
    }

    /// A prometheus probe scrapes the target's `/metrics` by default, a dependency's path, or a
    /// URL on loopback; it follows its dependency into the profiles that boot it.
    #[test]
    fn prometheus_probes_scrape_the_target_a_dependency_or_a_url() {
        let text = with_workload(indoc! {r#"
            [[dependency]]
            name = "exporter"
            command = "exporter"
            profiles = ["db"]

            [[probe]]
            kind = "prometheus"
            series = ["demo_sessions", "http_requests_total{route=\"/login\"}"]
            limits = { demo_sessions = 100 }

            [[probe]]
            kind = "prometheus"
            dependency = "exporter"
            path = "/stats"
            series = ["queue_depth"]

            [[probe]]
            name = "node"
            kind = "prometheus"
            url = "http://127.0.0.1:9100/metrics"
            series = ["node_load1"]

            [profile.db]
        "#});
        let config = parse(&text, "db").expect("valid");
        let got: Vec<_> = config
            .probes
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.watches(),
                    p.path.as_deref(),
                    p.url.as_deref(),
                    p.series.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "metrics",
                    "target".to_owned(),
                    Some("/metrics"),
                    None,
                    vec![
                        "demo_sessions".to_owned(),
                        "http_requests_total{route=\"/login\"}".to_owned()
                    ]
                ),
                (
                    "exporter",
                    "exporter".to_owned(),
                    Some("/stats"),
                    None,
                    vec!["queue_depth".to_owned()]
                ),
                (
                    "node",
                    "http://127.0.0.1:9100/metrics".to_owned(),
                    None,
                    Some("http://127.0.0.1:9100/metrics"),
                    vec!["node_load1".to_owned()]
                ),
            ]
        );
        assert_eq!(config.probes[0].limits["demo_sessions"], 100.0);
        // Without the exporter's profile, its probe goes with it.
        let config = parse(&text, "default").expect("valid");
        let names: Vec<&str> = config.probes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["metrics", "node"]);
    }
}
