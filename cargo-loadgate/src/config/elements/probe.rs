//! `[[probe]]`: what a dependency is doing during the run (issue 16, "Probes"). A top-level array
//! of tables beside `[[dependency]]`, which it names: a probe watches a companion the config
//! declares, whatever the profile. `targets::probe` samples it, `compare::probe` judges its
//! `limits`. Every problem is reported at once; a probe naming an undeclared dependency is one.

use super::key::{Element, Key, names};
use crate::config::source::{Cx, Tbl, Val, array_of_tables, keyword, number, string, suggest};
use crate::config::types::{DependencyConfig, DependencySource, Preset, ProbeConfig, ProbeKind};
use std::collections::BTreeMap;

/// The top-level key.
pub(crate) const PROBE: &str = "probe";

/// `probe.name`.
pub(crate) const NAME: Key<String> = Key::new(
    "name",
    "its name in the result and reports; default: the dependency's name",
    |cx, v, _| {
        let s = string(cx, v, "a string (the probe's name)")?;
        let ok = !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
        if !ok {
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
    "`postgres`: `pg_stat_activity` and `pg_stat_database` of a `postgres` dependency, once a second",
    |cx, v, _| {
        keyword(
            cx,
            v,
            &[("postgres", ProbeKind::Postgres)],
            "unknown probe kind",
            "`probe.kind`",
        )
    },
);
/// `probe.dependency`.
pub(crate) const DEPENDENCY: Key<String> = Key::new(
    "dependency",
    "the `[[dependency]]` it watches, by name",
    |cx, v, _| string(cx, v, "a string (a dependency's name)").map(str::to_owned),
);
/// `probe.limits`.
pub(crate) const LIMITS: Key<BTreeMap<String, f64>> = Key::new(
    "limits",
    "gate checks, series = highest allowed: a gauge's largest sample, a counter's increase over \
     the run, e.g. `{ deadlocks = 0, connections_waiting = 5 }`",
    limits,
);

/// The keys of one entry.
pub(crate) const KEYS: &[&dyn Element] = &[&NAME, &KIND, &DEPENDENCY, &LIMITS];

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
        let known = crate::measure::probe::POSTGRES_SERIES
            .iter()
            .map(|s| s.name);
        if !crate::measure::probe::POSTGRES_SERIES
            .iter()
            .any(|s| s.name == name)
        {
            cx.error(
                v.file,
                key.span(),
                format!(
                    "`probe.limits` names series `{name}`, which a postgres probe does not have"
                ),
                Some(match suggest(name, known.clone()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!(
                        "its series: {}",
                        known
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
            );
            ok = false;
            continue;
        }
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

/// Reads every `[[probe]]` of `root` (the user's top level), checking each against the declared
/// `dependencies`: the dependency is declared and is a `postgres` one, and names are unique.
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
            .required(cx, KIND.name, &label, "add kind = \"postgres\"")
            .and_then(|v| KIND.read(cx, v, p));
        let dependency_v = t.required(
            cx,
            DEPENDENCY.name,
            &label,
            "add the name of the [[dependency]] it watches, e.g. dependency = \"db\"",
        );
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
                Some(d) if !is_postgres(&d.source) => cx.error(
                    v.file,
                    v.span(),
                    format!(
                        "a postgres probe watches dependency `{name}`, which is not a PostgreSQL"
                    ),
                    Some(
                        "give the dependency preset = \"postgres\", or a postgres:// url"
                            .to_owned(),
                    ),
                ),
                Some(_) => {}
            }
        }
        let name = t.get(NAME.name).and_then(|v| NAME.read(cx, v, p));
        let limits = t
            .get(LIMITS.name)
            .and_then(|v| LIMITS.read(cx, v, p))
            .unwrap_or_default();
        let (Some(kind), Some(dependency)) = (kind, dependency) else {
            continue;
        };
        let name = name.unwrap_or_else(|| dependency.clone());
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
        probes.push(ProbeConfig {
            name,
            kind,
            dependency,
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
        assert_eq!(p.dependency, "db");
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
            kind = "prometheus"
            dependency = "db"
            limits = { deadlock = 0, connections_idle = -1 }

            [[probe]]
            kind = "postgres"
            dependency = "cache"

            [[probe]]
            dependency = "db"
            frequency = "1s"
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
                    "unknown probe kind `prometheus` in `probe.kind`",
                    Some("one of `postgres`")
                ),
                (
                    21,
                    12,
                    "`probe.limits` names series `deadlock`, which a postgres probe does not have",
                    Some("did you mean `deadlocks`?")
                ),
                (
                    21,
                    45,
                    "the limit of `connections_idle` is negative",
                    Some("a limit is the highest allowed value, 0 or more")
                ),
                (
                    25,
                    14,
                    "a postgres probe watches dependency `cache`, which is not a PostgreSQL",
                    Some("give the dependency preset = \"postgres\", or a postgres:// url")
                ),
                (
                    27,
                    1,
                    "entry 4 of `[[probe]]` has no `kind`",
                    Some("add kind = \"postgres\"")
                ),
                (
                    29,
                    1,
                    "unknown key `frequency` in entry 4 of `[[probe]]`",
                    Some("expected one of `name`, `kind`, `dependency`, `limits`")
                ),
            ],
            "{err}"
        );
    }
}
