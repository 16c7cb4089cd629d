//! `[[dependency]]`: the companions of the target (a database, a cache) that loadgate boots before
//! it, in `depends-on` order, and removes on every path (issue 16; `targets::dependency` runs
//! them). A top-level array of tables, not a profile's: what the service needs does not depend on
//! how it is measured. `profiles` limits one to the profiles that name it (a `db` profile that
//! boots PostgreSQL beside the target while the others run it alone); [`for_profile`] keeps a
//! profile's, and its probes follow them.
//!
//! The target learns a dependency's address through environment variables whose values are
//! templates, `DATABASE_URL = "postgres://app@{{db.host}}:{{db.port}}/app"`: `{{NAME.FIELD}}`
//! with the name of a declared dependency (or `self` inside a dependency) and one of
//! [`FIELDS`]. They are read in env values (the target's and the dependencies') and in a
//! dependency's `args` and `ready.command`, never in requests: the workload's `{{…}}` templates
//! live in `[[workload.operation]].request` only, so the two never meet, and a reference always has
//! a dot and a known field. This file checks every reference, the names, `depends-on` (undeclared
//! names, cycles) and fixed ports (clashes), all at once.

use super::key::{Element, Key, SubTable, names};
use super::target::{env_map, non_empty, ready_path, strings};
use crate::config::source::{
    Cx, Tbl, Val, array_of_tables, boolean, integer_in, keyword, positive_duration,
    positive_number, size, string, suggest,
};
use crate::config::types::{
    DependencyConfig, DependencyKind, DependencyReady, DependencySource, LoadgateConfig, Preset,
    PullPolicy, ReadyCheck,
};
use std::{collections::BTreeMap, ops::Range, path::Path, time::Duration};

/// The top-level key.
pub(crate) const DEPENDENCY: &str = "dependency";

/// The name a dependency's own templates use for itself.
pub const SELF: &str = "self";

/// The fields a template may read of a dependency, with what each is.
pub const FIELDS: &[(&str, &str)] = &[
    (
        "host",
        "the host it listens on (`127.0.0.1` for what loadgate boots)",
    ),
    ("port", "the port it listens on"),
    ("addr", "`host:port`"),
    (
        "url",
        "its URL: as written for `url`; `postgres://postgres@host:port/postgres` for the \
         `postgres` preset",
    ),
    ("user", "the user of a `postgres` preset (`postgres`)"),
    (
        "database",
        "the database of a `postgres` preset (`postgres`)",
    ),
];

/// How long a dependency's readiness is waited for when `ready.timeout` is not written.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The pause between readiness checks when `ready.interval` is not written.
pub const DEFAULT_READY_INTERVAL: Duration = Duration::from_millis(200);

/// `dependency.name`.
pub(crate) const NAME: Key<String> = Key::new(
    "name",
    "its name: letters, digits, `_` and `-`; templates name it, e.g. `{{db.port}}`",
    name,
);
/// `dependency.kind`.
pub(crate) const KIND: Key<DependencyKind> = Key::new(
    "kind",
    "`container`, `process` or `url`; default: `url` with `url`, `process` with `command`, \
     `container` with `image` or `dockerfile`, and the target's kind (`--target`) for a preset",
    kind,
);
/// `dependency.preset`.
pub(crate) const PRESET: Key<Preset> = Key::new(
    "preset",
    "a dependency loadgate knows how to run: `postgres`",
    preset,
);
/// `dependency.image`.
pub(crate) const IMAGE: Key<String> = Key::new(
    "image",
    "the image of a container dependency, `name:tag` (a preset's default: `postgres:16`)",
    non_empty,
);
/// `dependency.dockerfile`.
pub(crate) const DOCKERFILE: Key<String> = Key::new(
    "dockerfile",
    "a Dockerfile to build the container dependency from, relative to the config file",
    non_empty,
);
/// `dependency.pull`.
pub(crate) const PULL: Key<PullPolicy> = Key::new(
    "pull",
    "`never` (default) or `missing`: pull the image when the local engine lacks it (dependencies \
     only; the service under test is never pulled)",
    pull,
);
/// `dependency.command`.
pub(crate) const COMMAND: Key<String> = Key::new(
    "command",
    "the program of a process dependency (a path, or a name looked up in `$PATH`)",
    non_empty,
);
/// `dependency.args`.
pub(crate) const ARGS: Key<Vec<String>> = Key::new(
    "args",
    "its arguments; templates such as `{{self.port}}` are filled in",
    strings,
);
/// `dependency.url`.
pub(crate) const URL: Key<String> = Key::new(
    "url",
    "an existing one, `scheme://host:port/…`; nothing is booted",
    url,
);
/// `dependency.port`.
pub(crate) const PORT: Key<u16> = Key::new(
    "port",
    "the port it listens on; default a free loopback port, given as `$PORT` and `{{self.port}}`",
    |cx, v, _| integer_in(cx, v, "a port", 1..=65535).map(|p| p as u16),
);
/// `dependency.ready.tcp`.
pub(crate) const READY_TCP: Key<bool> = Key::new(
    "tcp",
    "`true`: ready when its port accepts a connection",
    |cx, v, _| boolean(cx, v),
);
/// `dependency.ready.http`.
pub(crate) const READY_HTTP: Key<String> = Key::new(
    "http",
    "ready when `GET` of this path on its port answers 2xx",
    |cx, v, _| ready_path(cx, v),
);
/// `dependency.ready.command`.
pub(crate) const READY_COMMAND: Key<Vec<String>> = Key::new(
    "command",
    "ready when this command exits 0, e.g. `[\"pg_isready\", \"-h\", \"{{self.host}}\", \"-p\", \
     \"{{self.port}}\"]`",
    |cx, v, what| {
        let argv = strings(cx, v, what)?;
        if argv.is_empty() {
            cx.error(v.file, v.span(), format!("{what} is empty"), None);
            return None;
        }
        Some(argv)
    },
);
/// `dependency.ready.timeout`.
pub(crate) const READY_TIMEOUT: Key<Duration> = Key::qualified(
    "timeout",
    "how long to wait (default 60s)",
    positive_duration,
);
/// `dependency.ready.interval`.
pub(crate) const READY_INTERVAL: Key<Duration> = Key::qualified(
    "interval",
    "the pause between checks (default 200ms)",
    positive_duration,
);
/// `dependency.ready`.
pub(crate) const READY: SubTable = SubTable {
    name: "ready",
    doc: "one of `tcp`, `http` or `command`, with `timeout` and `interval`; default `tcp = true` \
          (`pg_isready` for the `postgres` preset)",
    expected: "a table like { tcp = true }",
    keys: &[
        &READY_TCP,
        &READY_HTTP,
        &READY_COMMAND,
        &READY_TIMEOUT,
        &READY_INTERVAL,
    ],
};
/// `dependency.cpus`.
pub(crate) const CPUS: Key<f64> = Key::new(
    "cpus",
    "CPU limit in cores (container kind; a process runs without one)",
    positive_number,
);
/// `dependency.memory`.
pub(crate) const MEMORY: Key<u64> = Key::new(
    "memory",
    "memory limit (container kind; a process runs without one)",
    |cx, v, _| size(cx, v),
);
/// `dependency.env`.
pub(crate) const ENV: Key<BTreeMap<String, String>> = Key::new(
    "env",
    "its environment; values may name other dependencies it depends on",
    env_map,
);
/// `dependency.depends-on`.
pub(crate) const DEPENDS_ON: Key<Vec<String>> = Key::new(
    "depends-on",
    "the dependencies booted and ready before this one",
    strings,
);

/// `dependency.profiles`.
pub(crate) const PROFILES: Key<Vec<String>> = Key::new(
    "profiles",
    "the profiles that boot it (every profile when absent); its probes follow it",
    strings,
);

/// The keys of one entry, in the order "expected one of" lists them.
pub(crate) const KEYS: &[&dyn Element] = &[
    &NAME,
    &KIND,
    &PRESET,
    &IMAGE,
    &DOCKERFILE,
    &PULL,
    &COMMAND,
    &ARGS,
    &URL,
    &PORT,
    &READY,
    &CPUS,
    &MEMORY,
    &ENV,
    &DEPENDS_ON,
    &PROFILES,
];

/// The keys that say what a dependency runs; one of them (or `preset` with `image`) is needed.
const SOURCES: [&Key<String>; 4] = [&IMAGE, &DOCKERFILE, &COMMAND, &URL];

fn name(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<String> {
    let s = string(cx, v, "a string (the dependency's name)")?;
    if !crate::config::source::is_entry_name(s) {
        cx.error(
            v.file,
            v.span(),
            format!("{what} {s:?} is not a dependency name"),
            Some("use letters, digits, `_` and `-`, e.g. \"db\"".to_owned()),
        );
        return None;
    }
    if s == SELF {
        cx.error(
            v.file,
            v.span(),
            format!("`{SELF}` cannot name a dependency"),
            Some(format!(
                "`{{{{{SELF}.port}}}}` is how a dependency names itself; choose another name"
            )),
        );
        return None;
    }
    // `{{var.NAME}}` and `{{target.FIELD}}` in a data step mean `[data] vars` and the target:
    // a dependency of either name could never be reached from one.
    if let Some(reserved) = [super::data::VAR, super::data::TARGET]
        .into_iter()
        .find(|r| *r == s)
    {
        cx.error(
            v.file,
            v.span(),
            format!("`{reserved}` cannot name a dependency"),
            Some(format!(
                "`{{{{{reserved}.…}}}}` in a data step means {}; choose another name",
                if reserved == super::data::VAR {
                    "a `[data] vars` entry"
                } else {
                    "the target"
                }
            )),
        );
        return None;
    }
    Some(s.to_owned())
}

fn kind(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<DependencyKind> {
    let kinds = [
        DependencyKind::Container,
        DependencyKind::Process,
        DependencyKind::Url,
    ];
    keyword(
        cx,
        v,
        &kinds.map(|k| (k.name(), k)),
        "unknown kind",
        "`dependency.kind`",
    )
}

fn preset(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<Preset> {
    keyword(
        cx,
        v,
        &Preset::ALL.map(|p| (p.name(), p)),
        "unknown preset",
        "`dependency.preset`",
    )
}

fn pull(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<PullPolicy> {
    keyword(
        cx,
        v,
        &[
            ("never", PullPolicy::Never),
            ("missing", PullPolicy::Missing),
        ],
        "unknown pull policy",
        "`dependency.pull`",
    )
}

fn url(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<String> {
    let s = string(cx, v, "a URL like \"postgres://app@127.0.0.1:5432/app\"")?;
    if url_host_port(s).is_none() {
        cx.error(
            v.file,
            v.span(),
            format!("{s:?} names no host and port"),
            Some(
                "write `scheme://host:port/…`, e.g. \"postgres://app@127.0.0.1:5432/app\""
                    .to_owned(),
            ),
        );
        return None;
    }
    Some(s.to_owned())
}

/// The host and port of `scheme://[user[:password]@]host[:port][/…]`; the port may be left out for
/// schemes whose port is known (`postgres`, `postgresql`, `redis`, `http`, `https`).
pub fn url_host_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(p) => p.parse().ok().filter(|&p| p > 0)?,
        None => match scheme {
            "postgres" | "postgresql" => 5432,
            "redis" => 6379,
            "http" => 80,
            "https" => 443,
            _ => return None,
        },
    };
    Some((host.to_owned(), port))
}

/// One `{{name.field}}` reference in a template, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference<'s> {
    /// The dependency (or `self`).
    pub name: &'s str,
    /// The field.
    pub field: &'s str,
}

/// The `{{name.field}}` references of `s`, or what is wrong with the first that is not one.
pub fn references(s: &str) -> Result<Vec<Reference<'_>>, String> {
    super::placeholder::placeholders(s)?
        .into_iter()
        .map(|inner| {
            let inner = inner.trim();
            match inner.split_once('.') {
                Some((name, field)) if !name.is_empty() && !field.is_empty() => {
                    Ok(Reference { name, field })
                }
                _ => Err(format!(
                    "`{{{{{inner}}}}}` is not a dependency reference; write \
                     `{{{{NAME.FIELD}}}}`, e.g. `{{{{db.port}}}}`"
                )),
            }
        })
        .collect()
}

/// Replaces every `{{name.field}}` of `s` by `value(name, field)`; `None` from it leaves the text
/// as written (validation has refused such references before anything is booted).
pub fn render_references(s: &str, value: impl Fn(&str, &str) -> Option<String>) -> String {
    super::placeholder::render_placeholders(s, |inner| {
        inner
            .split_once('.')
            .and_then(|(name, field)| value(name, field))
    })
}

/// Whether `field` of a dependency running `source` has a value.
pub(crate) fn field_available(source: &DependencySource, field: &str) -> Result<(), String> {
    let preset = matches!(
        source,
        DependencySource::Preset {
            preset: Preset::Postgres,
            ..
        }
    );
    match field {
        "host" | "port" | "addr" => Ok(()),
        "url" if preset || matches!(source, DependencySource::Url { .. }) => Ok(()),
        "url" => Err("`url` is known for a preset and for a `url` dependency only".to_owned()),
        "user" | "database" if preset => Ok(()),
        "user" | "database" => Err(format!("`{field}` is known for the `postgres` preset only")),
        other => Err(match suggest(other, FIELDS.iter().map(|(f, _)| *f)) {
            Some(best) => format!("unknown field `{other}`; did you mean `{best}`?"),
            None => format!(
                "unknown field `{other}`; expected one of {}",
                FIELDS
                    .iter()
                    .map(|(f, _)| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// What the cross-checks need of one entry: its config and where its parts are written.
struct Entry<'a> {
    config: DependencyConfig,
    table: Tbl<'a>,
    name_span: Range<usize>,
    /// Each `depends-on` item: its name and its value.
    depends_on: Vec<(String, Val<'a>)>,
    /// `profiles`, each item with where it is written; `None` when absent (every profile).
    profiles: Option<Vec<(String, Range<usize>)>>,
}

/// Which profiles boot one dependency (`profiles`), with where it is written, for
/// [`for_profile`].
pub(crate) struct ProfileFilter {
    /// The dependency's name.
    name: String,
    /// Its file.
    file: usize,
    /// Where its `profiles` value is written.
    span: Range<usize>,
    /// The profiles named, each with where it is written.
    profiles: Vec<(String, Range<usize>)>,
}

/// Reads every `[[dependency]]` of `root` (the user's top level) and checks them together:
/// duplicate names, undeclared or cyclic `depends-on`, clashing ports, and every template in
/// their `env`, `args` and `ready.command`. Every problem is reported. Returns them all, and the
/// `profiles` of those that name some ([`for_profile`] keeps each profile's).
pub(crate) fn read(
    cx: &Cx<'_>,
    root: &Tbl<'_>,
    prefix: &str,
) -> (Vec<DependencyConfig>, Vec<ProfileFilter>) {
    let entries: Vec<Entry<'_>> = array_of_tables(cx, root, DEPENDENCY, prefix)
        .into_iter()
        .enumerate()
        .filter_map(|(i, item)| entry(cx, item, prefix, i))
        .collect();
    // Names: each once.
    let mut seen: BTreeMap<&str, &Entry<'_>> = BTreeMap::new();
    for e in &entries {
        if let Some(first) = seen.get(e.config.name.as_str()) {
            cx.error(
                e.table.file,
                e.name_span.clone(),
                format!("dependency `{}` is declared twice", e.config.name),
                Some(format!(
                    "the first is at {}; give each dependency its own name",
                    first.config.location
                )),
            );
        } else {
            seen.insert(&e.config.name, e);
        }
    }
    let declared: Vec<&str> = seen.keys().copied().collect();
    // `depends-on`: declared, not itself.
    for e in &entries {
        for (name, v) in &e.depends_on {
            if *name == e.config.name {
                cx.error(
                    v.file,
                    v.span(),
                    format!("dependency `{name}` depends on itself"),
                    None,
                );
            } else if !declared.contains(&name.as_str()) {
                undeclared(cx, *v, name, &declared, "`depends-on`");
            }
        }
    }
    check_cycles(cx, &entries, &seen);
    check_ports(cx, &entries);
    // Templates: a dependency may name itself and what it depends on (it is booted after them).
    for e in &entries {
        let before = transitive_depends_on(&e.config.name, &seen);
        let t = &e.table;
        let mut values: Vec<Val<'_>> = t.get(ENV.name).map(table_values).unwrap_or_default();
        values.extend(t.get(ARGS.name).map(array_values).unwrap_or_default());
        let ready_command = t
            .get(READY.name)
            .and_then(|r| r.as_table())
            .and_then(|r| r.get(READY_COMMAND.name))
            .map(|v| Val { file: t.file, v });
        values.extend(ready_command.map(array_values).unwrap_or_default());
        for v in values {
            check_templates(cx, v, &entries, Some((&e.config, &before)));
        }
    }
    let filters = entries
        .iter()
        .filter_map(|e| {
            let profiles = e.profiles.clone()?;
            let v = e.table.get(PROFILES.name)?;
            Some(ProfileFilter {
                name: e.config.name.clone(),
                file: e.table.file,
                span: v.span(),
                profiles,
            })
        })
        .collect();
    (entries.into_iter().map(|e| e.config).collect(), filters)
}

/// The dependencies of `all` that `config`'s profile boots (those without `profiles`, and those
/// whose `profiles` name it), checked against it: every profile named exists (`available`),
/// what a kept dependency depends on is kept too, and every `{{NAME.…}}` in the profile's target
/// env names a kept one. Every problem is reported, at the `profiles` it concerns.
pub(crate) fn for_profile(
    cx: &Cx<'_>,
    all: &[DependencyConfig],
    filters: &[ProfileFilter],
    config: &LoadgateConfig,
    available: &[String],
) -> Vec<DependencyConfig> {
    let filter_of = |name: &str| filters.iter().find(|f| f.name == name);
    for f in filters {
        super::profile::check_profile_names(
            cx,
            f.file,
            &f.profiles,
            available,
            &format!("dependency `{}`", f.name),
        );
    }
    let boots = |name: &str| {
        filter_of(name).is_none_or(|f| f.profiles.iter().any(|(p, _)| *p == config.profile))
    };
    let kept: Vec<DependencyConfig> = all.iter().filter(|d| boots(&d.name)).cloned().collect();
    let left_out = |name: &str| {
        // Only a declared dependency with `profiles` can be left out.
        filter_of(name).filter(|_| all.iter().any(|d| d.name == name) && !boots(name))
    };
    for d in &kept {
        for needed in &d.depends_on {
            if let Some(f) = left_out(needed) {
                cx.error(
                    f.file,
                    f.span.clone(),
                    format!(
                        "profile `{}` boots dependency `{}`, which depends on `{needed}`, but \
                         `{needed}`'s `profiles` leave `{}` out",
                        config.profile, d.name, config.profile
                    ),
                    Some(format!(
                        "add \"{}\" to the `profiles` of `{needed}`, or give `{}` the same \
                         `profiles`",
                        config.profile, d.name
                    )),
                );
            }
        }
    }
    for value in config.target.env.values() {
        for reference in references(value).unwrap_or_default() {
            if let Some(f) = left_out(reference.name) {
                cx.error(
                    f.file,
                    f.span.clone(),
                    format!(
                        "profile `{}` fills `{{{{{}.{}}}}}` into the target's env, but dependency \
                         `{}` is not booted in it (its `profiles` leave `{}` out)",
                        config.profile,
                        reference.name,
                        reference.field,
                        reference.name,
                        config.profile
                    ),
                    Some(format!(
                        "add \"{}\" to its `profiles`, or set that env only in the profiles \
                         that boot it (`[profile.NAME.target] env`)",
                        config.profile
                    )),
                );
            }
        }
    }
    kept
}

/// The values of a table as written, without reporting anything (its reader has).
fn table_values(v: Val<'_>) -> Vec<Val<'_>> {
    v.as_table()
        .map(|t| {
            t.iter()
                .map(|(_, item)| Val {
                    file: v.file,
                    v: item,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The items of an array as written, without reporting anything (its reader has).
fn array_values(v: Val<'_>) -> Vec<Val<'_>> {
    match v.get() {
        toml::de::DeValue::Array(items) => items
            .iter()
            .map(|item| Val {
                file: v.file,
                v: item,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Checks the templates in the target's `env` tables as written (the top level's and every
/// profile's): each reference names a declared dependency and a field it has.
pub(crate) fn check_target_env<'a>(
    cx: &Cx<'_>,
    roots: impl IntoIterator<Item = &'a Tbl<'a>>,
    dependencies: &[DependencyConfig],
) {
    for root in roots {
        let env = root
            .get(super::target::SECTION.name)
            .and_then(|t| t.as_table())
            .and_then(|t| t.get(super::target::ENV.name))
            .map(|v| Val { file: root.file, v });
        for v in env.map(table_values).unwrap_or_default() {
            check_target_value(cx, v, dependencies);
        }
    }
}

fn check_target_value(cx: &Cx<'_>, v: Val<'_>, dependencies: &[DependencyConfig]) {
    let Some(text) = v.get().as_str() else {
        return;
    };
    let refs = match references(text) {
        Ok(r) => r,
        Err(e) => {
            cx.error(v.file, v.span(), e, None);
            return;
        }
    };
    let declared: Vec<&str> = dependencies.iter().map(|d| d.name.as_str()).collect();
    for r in refs {
        match dependencies.iter().find(|d| d.name == r.name) {
            Some(d) => {
                if let Err(e) = field_available(&d.source, r.field) {
                    cx.error(
                        v.file,
                        v.span(),
                        format!("`{{{{{}.{}}}}}`: {e}", r.name, r.field),
                        None,
                    );
                }
            }
            None => undeclared(cx, v, r.name, &declared, "a template"),
        }
    }
}

fn check_templates(
    cx: &Cx<'_>,
    v: Val<'_>,
    entries: &[Entry<'_>],
    owner: Option<(&DependencyConfig, &Vec<String>)>,
) {
    let Some(text) = v.get().as_str() else {
        return;
    };
    let refs = match references(text) {
        Ok(r) => r,
        Err(e) => {
            cx.error(v.file, v.span(), e, None);
            return;
        }
    };
    let declared: Vec<&str> = entries.iter().map(|e| e.config.name.as_str()).collect();
    for r in refs {
        let (target, name) = match owner {
            Some((me, _)) if r.name == SELF => (Some(me), me.name.as_str()),
            _ => (
                entries.iter().map(|e| &e.config).find(|c| c.name == r.name),
                r.name,
            ),
        };
        let Some(target) = target else {
            undeclared(cx, v, r.name, &declared, "a template");
            continue;
        };
        if let Err(e) = field_available(&target.source, r.field) {
            cx.error(
                v.file,
                v.span(),
                format!("`{{{{{}.{}}}}}`: {e}", r.name, r.field),
                None,
            );
            continue;
        }
        if let Some((me, before)) = owner
            && name != me.name
            && !before.iter().any(|b| b == name)
        {
            cx.error(
                v.file,
                v.span(),
                format!(
                    "dependency `{}` names `{name}`, which is not booted before it",
                    me.name
                ),
                Some(format!("add \"{name}\" to its `depends-on`")),
            );
        }
    }
}

pub(crate) fn undeclared(cx: &Cx<'_>, v: Val<'_>, name: &str, declared: &[&str], place: &str) {
    let help = match suggest(name, declared.iter().copied()) {
        Some(best) => format!("did you mean `{best}`?"),
        None if declared.is_empty() => {
            format!("declare it with [[dependency]] name = \"{name}\"")
        }
        None => format!(
            "declared: {}",
            declared
                .iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    cx.error(
        v.file,
        v.span(),
        format!("{place} names dependency `{name}`, which is not declared"),
        Some(help),
    );
}

/// Every dependency `name` waits for, directly or not (cycles are cut; they are reported apart).
fn transitive_depends_on(name: &str, by_name: &BTreeMap<&str, &Entry<'_>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut todo = vec![name.to_owned()];
    while let Some(n) = todo.pop() {
        if let Some(e) = by_name.get(n.as_str()) {
            for d in &e.config.depends_on {
                if d != name && !out.contains(d) {
                    out.push(d.clone());
                    todo.push(d.clone());
                }
            }
        }
    }
    out
}

/// Reports each cycle of `depends-on` once, at the `depends-on` of the first entry on it.
fn check_cycles(cx: &Cx<'_>, entries: &[Entry<'_>], by_name: &BTreeMap<&str, &Entry<'_>>) {
    let mut reported: Vec<Vec<String>> = Vec::new();
    for e in entries {
        // Depth-first from `e`, looking for a path back to it.
        let start = e.config.name.as_str();
        let mut stack: Vec<(String, Vec<String>)> =
            vec![(start.to_owned(), vec![start.to_owned()])];
        let mut visited: Vec<String> = Vec::new();
        while let Some((node, path)) = stack.pop() {
            let Some(n) = by_name.get(node.as_str()) else {
                continue;
            };
            for d in &n.config.depends_on {
                if d == start && path.len() > 1 {
                    let mut cycle = path.clone();
                    let mut key = cycle.clone();
                    key.sort();
                    if !reported.contains(&key) {
                        reported.push(key);
                        cycle.push(start.to_owned());
                        let span = e
                            .table
                            .key_span(DEPENDS_ON.name)
                            .unwrap_or_else(|| e.name_span.clone());
                        cx.error(
                            e.table.file,
                            span,
                            format!("the dependencies form a cycle: {}", cycle.join(" → ")),
                            Some("remove one of these `depends-on` entries".to_owned()),
                        );
                    }
                } else if d != &node && !visited.contains(d) {
                    visited.push(d.clone());
                    let mut next = path.clone();
                    next.push(d.clone());
                    stack.push((d.clone(), next));
                }
            }
        }
    }
}

/// Two dependencies may not be given the same fixed port: the second could not listen.
fn check_ports(cx: &Cx<'_>, entries: &[Entry<'_>]) {
    let mut taken: BTreeMap<u16, &str> = BTreeMap::new();
    for e in entries {
        let Some(port) = e.config.port else { continue };
        match taken.get(&port) {
            Some(first) => {
                let span = e
                    .table
                    .get(PORT.name)
                    .map_or(e.name_span.clone(), |v| v.span());
                cx.error(
                    e.table.file,
                    span,
                    format!(
                        "dependencies `{first}` and `{}` both listen on port {port}",
                        e.config.name
                    ),
                    Some("give one another port, or leave `port` out for a free one".to_owned()),
                );
            }
            None => {
                taken.insert(port, &e.config.name);
            }
        }
    }
}

fn entry<'a>(cx: &Cx<'_>, v: Val<'a>, prefix: &str, index: usize) -> Option<Entry<'a>> {
    let label = format!("entry {} of `[[{prefix}{DEPENDENCY}]]`", index + 1);
    let t = Tbl::of(cx, v, label.clone(), "a table (a dependency)")?;
    t.check_keys(cx, &names(KEYS));
    let d = DEPENDENCY;
    let read = |key: &Key<String>| t.get(key.name).map(|v| (v, key.read(cx, v, d)));
    let name_val = t.required(cx, NAME.name, &label, "add e.g. name = \"db\"");
    let name = name_val.and_then(|v| NAME.read(cx, v, d));
    let kind = t.get(KIND.name).map(|v| (v, KIND.read(cx, v, d)));
    let preset = t.get(PRESET.name).map(|v| (v, PRESET.read(cx, v, d)));
    let image = read(&IMAGE);
    let dockerfile = read(&DOCKERFILE);
    let command = read(&COMMAND);
    let url_v = read(&URL);
    let pull = t.get(PULL.name).map(|v| (v, PULL.read(cx, v, d)));
    let args = t.get(ARGS.name).map(|v| (v, ARGS.read(cx, v, d)));
    let port = t.get(PORT.name).map(|v| (v, PORT.read(cx, v, d)));
    let cpus = t.get(CPUS.name).map(|v| (v, CPUS.read(cx, v, d)));
    let memory = t.get(MEMORY.name).map(|v| (v, MEMORY.read(cx, v, d)));
    let env = t.get(ENV.name).map(|v| ENV.read(cx, v, d));
    let depends_v = t.get(DEPENDS_ON.name);
    let depends_on = depends_v.map(|v| DEPENDS_ON.read(cx, v, d));
    let profiles = t.get(PROFILES.name).map(|v| {
        PROFILES.read(cx, v, d).map(|names| {
            names
                .into_iter()
                .zip(array_values(v).into_iter().map(|item| item.span()))
                .collect::<Vec<_>>()
        })
    });
    let ready = ready(
        cx,
        &t,
        if t.get(PRESET.name).is_some() {
            ReadyCheck::Command(postgres_ready_command())
        } else {
            ReadyCheck::Tcp
        },
    );

    // What it runs: one source, or a preset (with an image for the container kind).
    let mut given: Vec<(&str, Val<'a>)> = SOURCES
        .iter()
        .filter_map(|k| t.get(k.name).map(|v| (k.name, v)))
        .collect();
    // The later one written is the one reported.
    given.sort_by_key(|(k, _)| t.key_span(k).map_or(0, |s| s.start));
    let mut ok = true;
    if let Some((first, _)) = given.first() {
        for (extra, v) in given.iter().skip(1) {
            cx.error(
                v.file,
                t.key_span(extra).unwrap_or_else(|| v.span()),
                format!("`{extra}` and `{first}` both say what dependency runs"),
                Some("give only one of `image`, `dockerfile`, `command` or `url`".to_owned()),
            );
            ok = false;
        }
    }
    if let Some((pv, _)) = preset
        && let Some((other, ov)) = given.iter().find(|(k, _)| *k != IMAGE.name)
    {
        cx.error(
            ov.file,
            t.key_span(other).unwrap_or_else(|| ov.span()),
            format!("`{other}` cannot be given with `preset`"),
            Some("a preset says what runs; only its `image` may be chosen".to_owned()),
        );
        let _ = pv;
        ok = false;
    }
    if preset.is_none() && given.is_empty() {
        if !SOURCES.iter().any(|k| t.has_typo_of(k.name)) && !t.has_typo_of(PRESET.name) {
            cx.error(
                t.file,
                t.span.clone(),
                format!("{label} does not say what runs"),
                Some(
                    "add one of `preset`, `image`, `dockerfile`, `command` or `url`, e.g. \
                     preset = \"postgres\""
                        .to_owned(),
                ),
            );
        }
        ok = false;
    }
    let source = match (preset, &image, &dockerfile, &command, &url_v) {
        (Some((_, p)), image, ..) => p.map(|preset| DependencySource::Preset {
            preset,
            image: image.as_ref().and_then(|(_, i)| i.clone()),
            pull: PullPolicy::Never,
        }),
        (None, Some((_, i)), ..) => i.clone().map(|reference| DependencySource::Image {
            reference,
            pull: PullPolicy::Never,
        }),
        (None, None, Some((_, f)), ..) => f.clone().map(|f| DependencySource::Dockerfile {
            path: cx.files[0]
                .path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default()
                .join(f),
        }),
        (None, None, None, Some((_, c)), _) => c.clone().map(|command| DependencySource::Command {
            command,
            args: Vec::new(),
        }),
        (None, None, None, None, Some((_, u))) => {
            u.clone().map(|url| DependencySource::Url { url })
        }
        _ => None,
    };
    // Which kinds the source can run as, and the kind asked for.
    let declared_kind = match kind {
        Some((_, k)) => Some(k?),
        None => None,
    };
    let fits = |k: DependencyKind| match &source {
        Some(DependencySource::Preset { .. }) => k != DependencyKind::Url,
        Some(DependencySource::Image { .. } | DependencySource::Dockerfile { .. }) => {
            k == DependencyKind::Container
        }
        Some(DependencySource::Command { .. }) => k == DependencyKind::Process,
        Some(DependencySource::Url { .. }) => k == DependencyKind::Url,
        None => true,
    };
    let kind = match (declared_kind, &source) {
        (Some(k), _) if !fits(k) => {
            let at = kind.map_or_else(|| (t.file, t.span.clone()), |(v, _)| (v.file, v.span()));
            let needs = match k {
                DependencyKind::Container => "`image`, `dockerfile` or `preset`",
                DependencyKind::Process => "`command` or `preset`",
                DependencyKind::Url => "`url`",
            };
            cx.error(
                at.0,
                at.1,
                format!("a `{}` dependency cannot run what this one names", k.name()),
                Some(format!("a `{}` dependency needs {needs}", k.name())),
            );
            ok = false;
            None
        }
        (Some(k), _) => Some(k),
        (None, Some(DependencySource::Image { .. } | DependencySource::Dockerfile { .. })) => {
            Some(DependencyKind::Container)
        }
        (None, Some(DependencySource::Command { .. })) => Some(DependencyKind::Process),
        (None, Some(DependencySource::Url { .. })) => Some(DependencyKind::Url),
        (None, _) => None,
    };
    // Keys that only some kinds use.
    let mut only = |present: Option<Val<'_>>, key: &str, allowed: bool, why: &str| {
        if let Some(v) = present
            && !allowed
        {
            cx.error(
                v.file,
                t.key_span(key).unwrap_or_else(|| v.span()),
                format!("`{key}` is not used by this dependency"),
                Some(why.to_owned()),
            );
            ok = false;
        }
    };
    let container_able = !matches!(
        source,
        Some(DependencySource::Command { .. } | DependencySource::Url { .. })
    ) && kind != Some(DependencyKind::Process);
    only(
        pull.map(|p| p.0),
        PULL.name,
        container_able,
        "`pull` applies to the image of a container dependency",
    );
    only(
        args.as_ref().map(|a| a.0),
        ARGS.name,
        matches!(source, Some(DependencySource::Command { .. }) | None),
        "`args` are the arguments of `command`",
    );
    for (present, key) in [
        (cpus.map(|c| c.0), CPUS.name),
        (memory.map(|m| m.0), MEMORY.name),
    ] {
        only(
            present,
            key,
            container_able,
            "limits apply to containers; a process dependency runs without them",
        );
    }
    let is_url = matches!(source, Some(DependencySource::Url { .. }));
    only(
        port.map(|p| p.0),
        PORT.name,
        !is_url,
        "a `url` dependency's port is the one in its url",
    );
    only(
        t.get(ENV.name),
        ENV.name,
        !is_url,
        "nothing is started for a `url` dependency",
    );
    only(
        t.get(READY.name),
        READY.name,
        !is_url,
        "a `url` dependency is not booted, so not waited for",
    );

    let depends_on_vals: Vec<(String, Val<'a>)> = depends_v
        .map(array_values)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| v.get().as_str().map(|s| (s.to_owned(), v)))
        .collect();
    let name = name?;
    let name_span = name_val.map_or(t.span.clone(), |v| v.span());
    let source = match source? {
        DependencySource::Preset { preset, image, .. } => DependencySource::Preset {
            preset,
            image,
            pull: match pull {
                Some((_, p)) => p?,
                None => PullPolicy::Never,
            },
        },
        DependencySource::Image { reference, .. } => DependencySource::Image {
            reference,
            pull: match pull {
                Some((_, p)) => p?,
                None => PullPolicy::Never,
            },
        },
        DependencySource::Command { command, .. } => DependencySource::Command {
            command,
            args: match args {
                Some((_, a)) => a?,
                None => Vec::new(),
            },
        },
        other => other,
    };
    let (line, col) = cx.files[t.file].position(t.span.start);
    let config = DependencyConfig {
        name,
        kind,
        source,
        port: match port {
            Some((_, p)) => Some(p?),
            None => None,
        },
        ready: ready?,
        cpus: match cpus {
            Some((_, c)) => Some(c?),
            None => None,
        },
        memory_bytes: match memory {
            Some((_, m)) => Some(m?),
            None => None,
        },
        env: env.unwrap_or(Some(BTreeMap::new()))?,
        depends_on: depends_on.unwrap_or(Some(Vec::new()))?,
        location: format!("{}:{line}:{col}", cx.files[t.file].path.display()),
    };
    let profiles = match profiles {
        Some(p) => Some(p?),
        None => None,
    };
    ok.then_some(Entry {
        config,
        table: t,
        name_span,
        depends_on: depends_on_vals,
        profiles,
    })
}

/// The readiness of the `postgres` preset when `ready` names no check: `pg_isready` (the one
/// beside the server it runs, at boot) against its address.
pub fn postgres_ready_command() -> Vec<String> {
    [
        "pg_isready",
        "-h",
        "{{self.host}}",
        "-p",
        "{{self.port}}",
        "-U",
        "postgres",
        "-d",
        "postgres",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// `ready`: one check, and its timeout and interval; `default` when it names no check.
fn ready(cx: &Cx<'_>, t: &Tbl<'_>, default: ReadyCheck) -> Option<DependencyReady> {
    let d = DEPENDENCY;
    let Some(v) = t.get(READY.name) else {
        return Some(DependencyReady {
            check: default,
            timeout: DEFAULT_READY_TIMEOUT,
            interval: DEFAULT_READY_INTERVAL,
        });
    };
    let r = Tbl::of(cx, v, format!("`ready` in {}", t.name), READY.expected)?;
    r.check_keys(cx, &names(READY.keys));
    let tcp = r.get(READY_TCP.name).map(|v| (v, READY_TCP.read(cx, v, d)));
    let http = r.get(READY_HTTP.name).map(|v| READY_HTTP.read(cx, v, d));
    let command = r
        .get(READY_COMMAND.name)
        .map(|v| READY_COMMAND.read(cx, v, READY.name));
    let timeout = r
        .get(READY_TIMEOUT.name)
        .map(|v| READY_TIMEOUT.read(cx, v, READY.name));
    let interval = r
        .get(READY_INTERVAL.name)
        .map(|v| READY_INTERVAL.read(cx, v, READY.name));
    let checks: Vec<&str> = [READY_TCP.name, READY_HTTP.name, READY_COMMAND.name]
        .into_iter()
        .filter(|k| r.get(k).is_some())
        .collect();
    for extra in checks.iter().skip(1) {
        cx.error(
            r.file,
            r.key_span(extra).unwrap_or_else(|| r.span.clone()),
            format!("`ready` has both `{}` and `{extra}`", checks[0]),
            Some("give one check: `tcp`, `http` or `command`".to_owned()),
        );
    }
    if let Some((tv, Some(false))) = tcp {
        cx.error(
            tv.file,
            tv.span(),
            "`ready.tcp = false` checks nothing",
            Some("write `tcp = true`, or another check".to_owned()),
        );
        return None;
    }
    let check = if let Some(h) = http {
        ReadyCheck::Http(h?)
    } else if let Some(c) = command {
        ReadyCheck::Command(c?)
    } else if let Some((_, t)) = tcp {
        t?;
        ReadyCheck::Tcp
    } else {
        default
    };
    (checks.len() <= 1).then_some(())?;
    Some(DependencyReady {
        check,
        timeout: timeout.unwrap_or(Some(DEFAULT_READY_TIMEOUT))?,
        interval: interval.unwrap_or(Some(DEFAULT_READY_INTERVAL))?,
    })
}

/// The dependencies in boot order: each after everything it depends on, otherwise as written.
/// Validation has refused cycles and undeclared names.
pub fn boot_order(dependencies: &[DependencyConfig]) -> Vec<&DependencyConfig> {
    let mut out: Vec<&DependencyConfig> = Vec::new();
    while out.len() < dependencies.len() {
        let before = out.len();
        for d in dependencies {
            let booted = |n: &String| out.iter().any(|o| &o.name == n);
            if !booted(&d.name) && d.depends_on.iter().all(booted) {
                out.push(d);
            }
        }
        if out.len() == before {
            // Unreachable after validation; never loop forever on a cycle.
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate::testing::{one_problem, parse, with_workload};
    use indoc::indoc;
    use test_case::test_case;

    /// `profiles` keeps a dependency, and the probes of it, to the profiles it names.
    #[test]
    fn a_dependency_with_profiles_boots_only_in_them_and_its_probe_follows() {
        let text = with_workload(indoc! {r#"
            [[dependency]]
            name = "db"
            preset = "postgres"
            profiles = ["db"]

            [[dependency]]
            name = "cache"
            command = "redis-server"

            [[probe]]
            kind = "postgres"
            dependency = "db"
            limits = { deadlocks = 0 }

            [profile.db]
            inherits = "quick"

            [profile.db.target]
            env = { DATABASE_URL = "postgres://{{db.user}}@{{db.addr}}/{{db.database}}" }
        "#});
        let names = |profile: &str| {
            let config = parse(&text, profile).unwrap_or_else(|e| panic!("{e}"));
            (
                config
                    .dependencies
                    .iter()
                    .map(|d| d.name.clone())
                    .collect::<Vec<_>>(),
                config.probes.len(),
            )
        };
        assert_eq!(names("db"), (vec!["db".to_owned(), "cache".to_owned()], 1));
        assert_eq!(names("ci"), (vec!["cache".to_owned()], 0));
        assert_eq!(names("default"), (vec!["cache".to_owned()], 0));
        // The set a profile boots is part of what it measures.
        let hash = |profile: &str| {
            crate::result::config_hash(
                &parse(&text, profile).unwrap(),
                crate::result::MeasurementMode::Stored,
            )
        };
        assert_ne!(hash("db"), hash("quick"));
    }

    #[test]
    fn profiles_that_leave_out_what_a_profile_needs_are_reported_at_once() {
        let text = with_workload(indoc! {r#"
            [target]
            env = { DATABASE_URL = "{{db.url}}" }

            [[dependency]]
            name = "db"
            preset = "postgres"
            profiles = ["db", "dbx"]

            [[dependency]]
            name = "worker"
            command = "worker"
            depends-on = ["db"]

            [profile.db]
            inherits = "quick"
        "#});
        let err = parse(&text, "db").expect_err("the config is invalid");
        let messages: Vec<String> = err
            .diagnostics()
            .iter()
            .map(|d| format!("{}:{} {} / {:?}", d.line, d.col, d.message, d.help))
            .collect();
        let all = messages.join("\n");
        assert!(
            all.contains("dependency `db` names an unknown profile `dbx`"),
            "{all}"
        );
        assert!(
            all.contains(
                "profile `ci` fills `{{db.url}}` into the target's env, but dependency `db` is \
                 not booted in it (its `profiles` leave `ci` out)"
            ),
            "{all}"
        );
        assert!(
            all.contains(
                "profile `ci` boots dependency `worker`, which depends on `db`, but `db`'s \
                 `profiles` leave `ci` out"
            ),
            "{all}"
        );
        // Both the env and the depends-on problems are the `profiles` line's.
        assert!(err.diagnostics().iter().all(|d| d.line == 12), "{all}");
    }

    #[test]
    fn a_preset_and_a_command_are_read_with_their_defaults() {
        let text = with_workload(indoc! {r#"
            [target]
            env = { DATABASE_URL = "postgres://app@{{db.host}}:{{ db.port }}/app", CACHE = "{{cache.addr}}" }

            [[dependency]]
            name = "db"
            preset = "postgres"

            [[dependency]]
            name = "cache"
            command = "redis-server"
            args = ["--port", "{{self.port}}"]
            ready = { command = ["redis-cli", "-p", "{{self.port}}", "ping"], timeout = "5s" }
            env = { DB = "{{db.url}}" }
            depends-on = ["db"]
        "#});
        let config = parse(&text, "default").unwrap_or_else(|e| panic!("{e}"));
        let [db, cache] = config.dependencies.as_slice() else {
            panic!("{:?}", config.dependencies)
        };
        assert_eq!(db.name, "db");
        assert_eq!(db.kind, None, "a preset follows the target's kind");
        assert_eq!(
            db.source,
            DependencySource::Preset {
                preset: Preset::Postgres,
                image: None,
                pull: PullPolicy::Never
            }
        );
        assert_eq!(
            db.ready.check,
            ReadyCheck::Command(postgres_ready_command())
        );
        assert_eq!(db.ready.timeout, DEFAULT_READY_TIMEOUT);
        assert_eq!(db.location, "loadgate.toml:9:1");
        assert_eq!(cache.kind, Some(DependencyKind::Process));
        assert_eq!(
            cache.source,
            DependencySource::Command {
                command: "redis-server".to_owned(),
                args: vec!["--port".to_owned(), "{{self.port}}".to_owned()]
            }
        );
        assert_eq!(
            cache.ready.check,
            ReadyCheck::Command(vec![
                "redis-cli".into(),
                "-p".into(),
                "{{self.port}}".into(),
                "ping".into()
            ])
        );
        assert_eq!(cache.ready.timeout, Duration::from_secs(5));
        assert_eq!(cache.depends_on, ["db"]);
        // Every profile gets them.
        assert_eq!(parse(&text, "quick").unwrap().dependencies.len(), 2);
    }

    #[test]
    fn an_image_with_pull_missing_and_a_url() {
        let text = with_workload(indoc! {r#"
            [[dependency]]
            name = "db"
            preset = "postgres"
            kind = "container"
            image = "postgres:16"
            pull = "missing"
            cpus = 1
            memory = "512MiB"

            [[dependency]]
            name = "shared"
            url = "postgres://app@127.0.0.1/app"
        "#});
        let config = parse(&text, "default").unwrap_or_else(|e| panic!("{e}"));
        let [db, shared] = config.dependencies.as_slice() else {
            panic!()
        };
        assert_eq!(db.kind, Some(DependencyKind::Container));
        assert_eq!(
            db.source,
            DependencySource::Preset {
                preset: Preset::Postgres,
                image: Some("postgres:16".to_owned()),
                pull: PullPolicy::Missing
            }
        );
        assert_eq!(db.memory_bytes, Some(512 * 1024 * 1024));
        assert_eq!(shared.kind, Some(DependencyKind::Url));
    }

    // Each case is one mistake (after the 5 lines of the smallest workload); exactly one problem
    // is reported, at its place.
    #[test_case("[[dependency]]\npreset = \"postgres\"\n", 6, 1, "entry 1 of `[[dependency]]` has no `name`", Some("add e.g. name = \"db\""); "no name")]
    #[test_case("[[dependency]]\nname = \"db\"\n", 6, 1, "entry 1 of `[[dependency]]` does not say what runs", Some("add one of `preset`, `image`, `dockerfile`, `command` or `url`, e.g. preset = \"postgres\""); "no source")]
    #[test_case("[[dependency]]\nname = \"db\"\npreset = \"postgre\"\n", 8, 10, "unknown preset `postgre` in `dependency.preset`", Some("did you mean `postgres`?"); "unknown preset")]
    #[test_case("[[dependency]]\nname = \"db\"\npreset = \"postgres\"\nprot = 5432\n", 9, 1, "unknown key `prot` in entry 1 of `[[dependency]]`", Some("did you mean `port`?"); "unknown key")]
    #[test_case("[[dependency]]\nname = \"d b\"\npreset = \"postgres\"\n", 7, 8, "`name` \"d b\" is not a dependency name", Some("use letters, digits, `_` and `-`, e.g. \"db\""); "bad name")]
    #[test_case("[[dependency]]\nname = \"db\"\ncommand = \"x\"\nimage = \"y:1\"\n", 9, 1, "`image` and `command` both say what dependency runs", Some("give only one of `image`, `dockerfile`, `command` or `url`"); "two sources")]
    #[test_case("[[dependency]]\nname = \"db\"\ncommand = \"x\"\nkind = \"container\"\n", 9, 8, "a `container` dependency cannot run what this one names", Some("a `container` dependency needs `image`, `dockerfile` or `preset`"); "kind does not fit")]
    #[test_case("[[dependency]]\nname = \"db\"\ncommand = \"x\"\npull = \"missing\"\n", 9, 1, "`pull` is not used by this dependency", Some("`pull` applies to the image of a container dependency"); "pull for a process")]
    #[test_case("[[dependency]]\nname = \"db\"\ncommand = \"x\"\ncpus = 1\n", 9, 1, "`cpus` is not used by this dependency", Some("limits apply to containers; a process dependency runs without them"); "cpus for a process")]
    #[test_case("[[dependency]]\nname = \"db\"\nurl = \"postgres://127.0.0.1/x\"\nport = 1\n", 9, 1, "`port` is not used by this dependency", Some("a `url` dependency's port is the one in its url"); "port for a url")]
    #[test_case("[[dependency]]\nname = \"db\"\nurl = \"nowhere\"\n", 8, 7, "\"nowhere\" names no host and port", Some("write `scheme://host:port/…`, e.g. \"postgres://app@127.0.0.1:5432/app\""); "url without host")]
    #[test_case("[[dependency]]\nname = \"db\"\npreset = \"postgres\"\nready = { tcp = true, http = \"/\" }\n", 9, 23, "`ready` has both `tcp` and `http`", Some("give one check: `tcp`, `http` or `command`"); "two ready checks")]
    #[test_case("[[dependency]]\nname = \"db\"\npreset = \"postgres\"\ndepends-on = [\"cache\"]\n", 9, 15, "`depends-on` names dependency `cache`, which is not declared", Some("declared: `db`"); "undeclared depends-on")]
    #[test_case("[target]\nenv = { URL = \"{{bd.port}}\" }\n[[dependency]]\nname = \"db\"\npreset = \"postgres\"\n", 7, 15, "a template names dependency `bd`, which is not declared", Some("did you mean `db`?"); "undeclared in a template")]
    #[test_case("[target]\nenv = { URL = \"{{db.prot}}\" }\n[[dependency]]\nname = \"db\"\npreset = \"postgres\"\n", 7, 15, "`{{db.prot}}`: unknown field `prot`; did you mean `port`?", None; "unknown field")]
    #[test_case("[target]\nenv = { URL = \"{{db}}\" }\n[[dependency]]\nname = \"db\"\npreset = \"postgres\"\n", 7, 15, "`{{db}}` is not a dependency reference; write `{{NAME.FIELD}}`, e.g. `{{db.port}}`", None; "no field")]
    #[test_case("[target]\nenv = { URL = \"{{c.user}}\" }\n[[dependency]]\nname = \"c\"\ncommand = \"x\"\n", 7, 15, "`{{c.user}}`: `user` is known for the `postgres` preset only", None; "field of another source")]
    #[test_case("[profile.ci.target]\nenv = { URL = \"{{db.port}}\" }\n", 7, 15, "a template names dependency `db`, which is not declared", Some("declare it with [[dependency]] name = \"db\""); "undeclared in a profile")]
    #[test_case("[[dependency]]\nname = \"a\"\ncommand = \"x\"\nenv = { B = \"{{b.port}}\" }\n[[dependency]]\nname = \"b\"\ncommand = \"y\"\n", 9, 13, "dependency `a` names `b`, which is not booted before it", Some("add \"b\" to its `depends-on`"); "template without depends-on")]
    #[test_case("[[dependency]]\nname = \"a\"\ncommand = \"x\"\nport = 5000\n[[dependency]]\nname = \"b\"\ncommand = \"y\"\nport = 5000\n", 13, 8, "dependencies `a` and `b` both listen on port 5000", Some("give one another port, or leave `port` out for a free one"); "port clash")]
    #[test_case("[[dependency]]\nname = \"self\"\ncommand = \"x\"\n", 7, 8, "`self` cannot name a dependency", Some("`{{self.port}}` is how a dependency names itself; choose another name"); "self as a name")]
    #[test_case("[[dependency]]\nname = \"var\"\ncommand = \"x\"\n", 7, 8, "`var` cannot name a dependency", Some("`{{var.…}}` in a data step means a `[data] vars` entry; choose another name"); "var as a name")]
    #[test_case("[[dependency]]\nname = \"target\"\ncommand = \"x\"\n", 7, 8, "`target` cannot name a dependency", Some("`{{target.…}}` in a data step means the target; choose another name"); "target as a name")]
    #[test_case("[profile.ci]\ndependency = []\n", 7, 1, "unknown key `dependency` in `[profile.ci]`", Some("expected one of `inherits`, `target`, `slo`, `workload`, `generator`, `ramp`, `soak`, `spike`, `stress`, `recovery`, `abort`, `gate`, `paired`, `data`, `teardown`"); "in a profile")]
    fn one_problem_is_reported(
        extra: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        one_problem(extra, line, col, message, help);
    }

    #[test]
    fn a_duplicate_a_cycle_and_an_undeclared_name_are_reported_at_once() {
        let text = with_workload(indoc! {r#"
            [target]
            env = { DATABASE_URL = "{{dbb.url}}" }

            [[dependency]]
            name = "db"
            preset = "postgres"
            depends-on = ["cache"]

            [[dependency]]
            name = "cache"
            command = "redis-server"
            depends-on = ["db"]

            [[dependency]]
            name = "db"
            command = "other"
        "#});
        let err = parse(&text, "default").expect_err("invalid");
        let got: Vec<(usize, usize, &str)> = err
            .diagnostics()
            .iter()
            .map(|d| (d.line, d.col, d.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    7,
                    24,
                    "a template names dependency `dbb`, which is not declared"
                ),
                (12, 1, "the dependencies form a cycle: db → cache → db"),
                (20, 8, "dependency `db` is declared twice"),
            ],
            "{err}"
        );
    }

    /// `cargo loadgate check` lists every dependency, and the listing reads back as the same ones
    /// (but for where each is written).
    #[test]
    fn the_resolved_listing_reads_back_with_its_dependencies() {
        let text = with_workload(indoc! {r#"
            [target]
            env = { DATABASE_URL = "{{db.url}}" }
            [[dependency]]
            name = "db"
            preset = "postgres"
            image = "postgres:15"
            pull = "missing"
            memory = "1GiB"
            [[dependency]]
            name = "worker"
            command = "worker"
            args = ["--db", "{{db.addr}}"]
            port = 7000
            ready = { http = "/ready", timeout = "5s" }
            env = { MODE = "test" }
            depends-on = ["db"]
            [[dependency]]
            name = "shared"
            url = "redis://127.0.0.1:6380"
        "#});
        let config = parse(&text, "default").unwrap();
        let listing = crate::config::render_resolved(&config);
        assert!(
            listing.contains("\n[[dependency]]\nname = \"worker\"\nkind = \"process\"\n"),
            "{listing}"
        );
        let again = parse(&listing, "default").unwrap_or_else(|e| panic!("{listing}\n{e}"));
        let without_places = |c: &crate::config::LoadgateConfig| -> Vec<DependencyConfig> {
            c.dependencies
                .iter()
                .map(|d| DependencyConfig {
                    location: String::new(),
                    ..d.clone()
                })
                .collect()
        };
        assert_eq!(without_places(&again), without_places(&config));
    }

    /// The README's example loads for every built-in profile, with its template in the target's env.
    #[test]
    fn the_demo_db_example_loads() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/demo-service/db.toml");
        let text = std::fs::read_to_string(&path).expect("fixtures/demo-service/db.toml");
        for profile in crate::config::BUILTIN_PROFILES {
            let config = crate::config::parse_config_str(&text, &path, None, profile)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(config.dependencies.len(), 1);
            assert!(config.target.env["DATABASE_URL"].contains("{{db.port}}"));
        }
    }

    #[test]
    fn boot_order_follows_depends_on_then_the_order_written() {
        let text = with_workload(indoc! {r#"
            [[dependency]]
            name = "app-cache"
            command = "c"
            depends-on = ["db", "queue"]
            [[dependency]]
            name = "queue"
            command = "q"
            depends-on = ["db"]
            [[dependency]]
            name = "db"
            preset = "postgres"
            [[dependency]]
            name = "mail"
            command = "m"
        "#});
        let config = parse(&text, "default").unwrap_or_else(|e| panic!("{e}"));
        let order: Vec<&str> = boot_order(&config.dependencies)
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(order, ["db", "mail", "queue", "app-cache"]);
    }

    #[test_case("postgres://app@127.0.0.1:5433/app", Some(("127.0.0.1", 5433)))]
    #[test_case("postgres://app:pw@localhost/app", Some(("localhost", 5432)))]
    #[test_case("redis://[::1]:7000", Some(("::1", 7000)))]
    #[test_case("tcp://127.0.0.1", None)]
    #[test_case("127.0.0.1:5432", None)]
    fn url_hosts_and_ports(url: &str, expected: Option<(&str, u16)>) {
        assert_eq!(url_host_port(url), expected.map(|(h, p)| (h.to_owned(), p)));
    }

    #[test]
    fn references_render_and_unknown_ones_stay() {
        let out = render_references("x={{db.host}}:{{ db.port }}/{{db.nope}}", |n, f| {
            (n == "db").then(|| match f {
                "host" => Some("127.0.0.1".to_owned()),
                "port" => Some("5555".to_owned()),
                _ => None,
            })?
        });
        assert_eq!(out, "x=127.0.0.1:5555/{{db.nope}}");
    }

    #[test]
    fn the_dependency_set_enters_the_config_hash_but_not_its_ports() {
        use crate::result::{MeasurementMode, config_hash};
        let hash = |extra: &str| {
            config_hash(
                &parse(&with_workload(extra), "default").unwrap(),
                MeasurementMode::Stored,
            )
        };
        let none = hash("");
        let db = hash("[[dependency]]\nname = \"db\"\npreset = \"postgres\"\n");
        let db_port = hash("[[dependency]]\nname = \"db\"\npreset = \"postgres\"\nport = 6000\n");
        let db_image =
            hash("[[dependency]]\nname = \"db\"\npreset = \"postgres\"\nimage = \"postgres:15\"\n");
        assert_ne!(none, db);
        assert_eq!(db, db_port, "ports are not part of the set");
        assert_ne!(db, db_image);
    }
}
