//! `[data]` and `[teardown]`: the steps that load a data tier before the measurement, and those
//! run at the end of every run (issue 16, seed 004). Profile sections like `[spike]`, looked up key
//! by key, so a tier is a profile: `[profile.db-large] inherits = "db"` with its own
//! `[profile.db-large.data] tier` and `vars` runs the `db` profile's steps on more rows.
//!
//! A step runs SQL files with `psql` against a PostgreSQL `[[dependency]]`
//! (`sql = ["schema.sql", "seed.sql"], dependency = "db"`), or a command (`command`, `args`,
//! `env`). Every step gets the workload's seed and the tier: psql variables `:seed`, `:tier` and
//! one per `[data] vars` entry; in a command's `args` and `env` values, the templates `{{seed}}`,
//! `{{tier}}`, `{{var.NAME}}`, a dependency's `{{NAME.FIELD}}`, and (in a step run `after =
//! "target"`) `{{target.url}}`, `{{target.host}}` and `{{target.port}}`. Pass 1 checks each step as
//! written; [`check_profile`] checks, per profile, what depends on the profile: the dependencies it
//! boots, the variables and the tier it sets.

use super::dependency::{field_available, undeclared};
use super::key::{Key, Section};
use super::profile::Look;
use super::target::{env_map, non_empty, strings};
use crate::config::source::{Cx, Tbl, Val, array, keyword, positive_duration, string};
use crate::config::types::{
    DataAction, DataConfig, DataStage, DataStep, DependencyConfig, DependencySource, Preset,
    SqlFile, TeardownConfig,
};
use std::{collections::BTreeMap, path::Path, time::Duration};
use toml::de::DeValue;

/// How long a step may take when its `timeout` is not written.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(300);

/// The template of the workload's seed.
pub const SEED: &str = "seed";
/// The template of the tier's name.
pub const TIER_TEMPLATE: &str = "tier";
/// The prefix of a `[data] vars` entry in templates (`{{var.accounts}}`).
pub const VAR: &str = "var";
/// The prefix of the target's address in the templates of a step run after it (`{{target.url}}`).
pub const TARGET: &str = "target";
/// The fields `{{target.…}}` has.
pub const TARGET_FIELDS: &[&str] = &["url", "host", "port"];

/// `data.tier`.
pub(crate) const TIER: Key<String> = Key::qualified(
    "tier",
    "the data tier's name, recorded in the result and part of the config hash: runs on different \
     tiers never compare",
    tier,
);
/// `data.vars`.
pub(crate) const VARS: Key<BTreeMap<String, String>> = Key::qualified(
    "vars",
    "named values every step gets: psql variables (`:accounts`) and `{{var.NAME}}` in a \
     command's `args` and `env`",
    vars,
);
/// `data.steps`.
pub(crate) const STEPS: Key<Vec<DataStep>> = Key::qualified(
    "steps",
    "the steps, in order: `{ name, sql = [FILES], dependency }` or `{ name, command, args, env }`, \
     each with `after` (`\"dependencies\"` or `\"target\"`) and `timeout` (default 5m)",
    |cx, v, what| steps(cx, v, what, false),
);

/// `[data]`.
pub(crate) const SECTION: Section = Section {
    name: "data",
    keys: &[&TIER, &VARS, &STEPS],
    check_table: None,
};

/// `teardown.steps`.
pub(crate) const TEARDOWN_STEPS: Key<Vec<DataStep>> = Key::qualified(
    "steps",
    "the steps run at the end of every run (success, failure, Ctrl-C, SIGTERM), after the target \
     stops and before the dependencies do: `{ name, sql, dependency }` or `{ name, command, args, \
     env }`, each with `timeout`",
    |cx, v, what| steps(cx, v, what, true),
);

/// `[teardown]`.
pub(crate) const TEARDOWN: Section = Section {
    name: "teardown",
    keys: &[&TEARDOWN_STEPS],
    check_table: None,
};

/// The keys of a step, in the order "expected one of" lists them.
const STEP_KEYS: &[&str] = &[
    "name",
    "sql",
    "dependency",
    "command",
    "args",
    "env",
    "after",
    "timeout",
];

/// An example of a step, for messages.
const STEP_EXAMPLE: &str = "{ name = \"seed\", sql = [\"sql/seed.sql\"], dependency = \"db\" }";

fn tier(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<String> {
    let s = non_empty(cx, v, what)?;
    if s.chars().any(char::is_control) {
        cx.error(
            v.file,
            v.span(),
            format!("{what} {s:?} has a control character"),
            Some("name the tier with letters, digits and punctuation, e.g. \"10k\"".to_owned()),
        );
        return None;
    }
    Some(s)
}

/// Whether `s` can name a psql variable and a `{{var.NAME}}`: a letter or `_`, then letters,
/// digits and `_`.
fn is_variable_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn vars(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<BTreeMap<String, String>> {
    let map = env_map(cx, v, what)?;
    let mut ok = true;
    let table = v.as_table();
    for name in map.keys() {
        let at = table
            .and_then(|t| t.iter().find(|(k, _)| k.get_ref() == name.as_str()))
            .map_or_else(|| v.span(), |(k, _)| k.span());
        if !is_variable_name(name) {
            cx.error(
                v.file,
                at,
                format!("`{name}` in {what} is not a variable name"),
                Some("use a letter or `_`, then letters, digits and `_`, e.g. accounts".to_owned()),
            );
            ok = false;
        } else if name == SEED || name == TIER_TEMPLATE {
            cx.error(
                v.file,
                at,
                format!("`{name}` in {what} is set by loadgate"),
                Some(format!(
                    "every step gets `{name}` already ({}); choose another name",
                    if name == SEED {
                        "the workload's seed"
                    } else {
                        "`[data] tier`"
                    }
                )),
            );
            ok = false;
        }
    }
    ok.then_some(map)
}

/// A step's name: letters, digits, `_`, `-` and `.`.
fn step_name(cx: &Cx<'_>, v: Val<'_>) -> Option<String> {
    let s = string(cx, v, "a string (the step's name)")?;
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !ok {
        cx.error(
            v.file,
            v.span(),
            format!("{s:?} is not a step name"),
            Some("use letters, digits, `_`, `-` and `.`, e.g. \"seed\"".to_owned()),
        );
        return None;
    }
    Some(s.to_owned())
}

/// The steps of `[data]` (`teardown` false) or `[teardown]`, every problem reported.
fn steps(cx: &Cx<'_>, v: Val<'_>, what: &str, teardown: bool) -> Option<Vec<DataStep>> {
    let items = array(cx, v, &format!("an array of steps, e.g. [{STEP_EXAMPLE}]"))?;
    let mut out: Vec<DataStep> = Vec::new();
    let mut ok = true;
    for (i, item) in items.into_iter().enumerate() {
        match step(cx, item, what, i, teardown) {
            Some(s) => {
                if out.iter().any(|o| o.name == s.name) {
                    let at = item
                        .as_table()
                        .and_then(|t| t.get("name"))
                        .map_or_else(|| item.span(), |n| n.span());
                    cx.error(
                        item.file,
                        at,
                        format!("step `{}` of {what} is written twice", s.name),
                        Some("give each step its own name".to_owned()),
                    );
                    ok = false;
                } else {
                    out.push(s);
                }
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn step(cx: &Cx<'_>, v: Val<'_>, what: &str, index: usize, teardown: bool) -> Option<DataStep> {
    let fallback = format!("step {} of {what}", index + 1);
    let t = Tbl::of(
        cx,
        v,
        fallback.clone(),
        &format!("a table like {STEP_EXAMPLE}"),
    )?;
    let name = t
        .required(cx, "name", &fallback, "add e.g. name = \"seed\"")
        .and_then(|n| step_name(cx, n));
    let label = name
        .as_ref()
        .map_or(fallback, |n| format!("step `{n}` of {what}"));
    // Named in messages by its name once it has one.
    let t = Tbl::new(t.file, t.span.clone(), label.clone(), t.raw);
    let keys: Vec<&str> = STEP_KEYS
        .iter()
        .copied()
        .filter(|k| !(teardown && *k == "after"))
        .collect();
    t.check_keys(cx, &keys);
    let after = match t.get("after") {
        Some(a) => keyword(
            cx,
            a,
            &[
                (DataStage::Dependencies.name(), DataStage::Dependencies),
                (DataStage::Target.name(), DataStage::Target),
            ],
            "unknown stage",
            &format!("`after` of {label}"),
        ),
        None => Some(DataStage::Dependencies),
    };
    let timeout = match t.get("timeout") {
        Some(d) => positive_duration(cx, d, &format!("`timeout` of {label}")),
        None => Some(DEFAULT_STEP_TIMEOUT),
    };
    // Templates are checked as written here; what they name, per profile ([`check_profile`]).
    let mut templates_ok = true;
    for value in template_values(&t) {
        if let Some(text) = value.get().as_str()
            && let Err(e) = data_references(text)
        {
            cx.error(value.file, value.span(), e, None);
            templates_ok = false;
        }
    }
    let action = match (t.get("sql"), t.get("command")) {
        (Some(sql), Some(_)) => {
            cx.error(
                t.file,
                t.key_span("command").unwrap_or_else(|| sql.span()),
                format!("{label} has both `sql` and `command`"),
                Some("a step runs SQL files or a command; make two steps".to_owned()),
            );
            None
        }
        (Some(sql), None) => {
            for key in ["args", "env"] {
                if let Some(span) = t.key_span(key) {
                    cx.error(
                        t.file,
                        span,
                        format!("`{key}` is for a command step, and {label} runs SQL"),
                        Some(
                            "psql gets the seed, the tier and `[data] vars` as variables \
                             (`:seed`, `:accounts`)"
                                .to_owned(),
                        ),
                    );
                }
            }
            let files = sql_files(cx, sql, &label);
            let dependency = t
                .required(
                    cx,
                    "dependency",
                    &label,
                    "name the PostgreSQL [[dependency]] the SQL runs against, e.g. dependency = \"db\"",
                )
                .and_then(|d| string(cx, d, "a string (a dependency's name)"))
                .map(str::to_owned);
            match (files, dependency) {
                (Some(files), Some(dependency)) => Some(DataAction::Sql { dependency, files }),
                _ => None,
            }
        }
        (None, Some(command)) => {
            if let Some(span) = t.key_span("dependency") {
                cx.error(
                    t.file,
                    span,
                    format!("`dependency` is for an SQL step, and {label} runs a command"),
                    Some(
                        "a command reaches a dependency through its templates, e.g. \
                         \"{{db.url}}\""
                            .to_owned(),
                    ),
                );
            }
            let command = non_empty(cx, command, &format!("`command` of {label}"));
            let args = match t.get("args") {
                Some(a) => strings(cx, a, "`args`"),
                None => Some(Vec::new()),
            };
            let env = match t.get("env") {
                Some(e) => env_map(cx, e, &format!("`env` of {label}")),
                None => Some(BTreeMap::new()),
            };
            match (command, args, env) {
                (Some(command), Some(args), Some(env)) => {
                    Some(DataAction::Command { command, args, env })
                }
                _ => None,
            }
        }
        (None, None) => {
            if !t.has_typo_of("sql") && !t.has_typo_of("command") {
                cx.error(
                    t.file,
                    t.span.clone(),
                    format!("{label} runs nothing"),
                    Some(
                        "add `sql = [\"FILE.sql\"]` with `dependency`, or `command` with `args`"
                            .to_owned(),
                    ),
                );
            }
            None
        }
    };
    if !templates_ok {
        return None;
    }
    Some(DataStep {
        name: name?,
        action: action?,
        after: if teardown {
            DataStage::Dependencies
        } else {
            after?
        },
        timeout: timeout?,
    })
}

/// The SQL files of `sql` (one path or a list), resolved against the directory of the file they
/// are written in, each read for its digest; a file that cannot be read is reported at its path.
fn sql_files(cx: &Cx<'_>, v: Val<'_>, label: &str) -> Option<Vec<SqlFile>> {
    let items: Vec<Val<'_>> = match v.get() {
        DeValue::String(_) => vec![v],
        _ => array(cx, v, "an SQL file's path, or a list of them")?,
    };
    if items.is_empty() {
        cx.error(
            v.file,
            v.span(),
            format!("`sql` of {label} is empty"),
            Some("list the files to run, e.g. sql = [\"sql/seed.sql\"]".to_owned()),
        );
        return None;
    }
    let dir = cx.files[v.file]
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut ok = true;
    for item in items {
        let Some(written) = string(cx, item, "a string (an SQL file's path)") else {
            ok = false;
            continue;
        };
        let path = dir.join(written);
        match std::fs::read(&path) {
            Ok(bytes) => out.push(SqlFile {
                path,
                sha256: crate::result::hex_sha256(&bytes),
            }),
            Err(e) => {
                cx.error(
                    item.file,
                    item.span(),
                    format!("cannot read the SQL file {}: {e}", path.display()),
                    Some("paths are relative to the directory of the config file".to_owned()),
                );
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

/// The values of a step whose templates are filled in: `args` and the values of `env`.
fn template_values<'a>(t: &Tbl<'a>) -> Vec<Val<'a>> {
    let mut out = Vec::new();
    if let Some(args) = t.get("args")
        && let DeValue::Array(items) = args.get()
    {
        out.extend(items.iter().map(|v| Val { file: t.file, v }));
    }
    if let Some(env) = t.get("env").and_then(|e| e.as_table()) {
        out.extend(env.iter().map(|(_, v)| Val { file: t.file, v }));
    }
    out
}

/// One `{{…}}` of a data step's template: `seed`, `tier`, or `NAME.FIELD` (`var.NAME`,
/// `target.FIELD`, a dependency's field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataReference<'s> {
    /// `{{seed}}`.
    Seed,
    /// `{{tier}}`.
    Tier,
    /// `{{NAME.FIELD}}`.
    Field(&'s str, &'s str),
}

/// The `{{…}}` references of `s`, or what is wrong with the first that is not one.
pub fn data_references(s: &str) -> Result<Vec<DataReference<'_>>, String> {
    super::placeholder::placeholders(s)?
        .into_iter()
        .map(|inner| {
            let inner = inner.trim();
            match inner.split_once('.') {
                None if inner == SEED => Ok(DataReference::Seed),
                None if inner == TIER_TEMPLATE => Ok(DataReference::Tier),
                Some((name, field)) if !name.is_empty() && !field.is_empty() => {
                    Ok(DataReference::Field(name, field))
                }
                _ => Err(format!(
                    "`{{{{{inner}}}}}` is not a template of a data step; write `{{{{seed}}}}`, \
                     `{{{{tier}}}}`, `{{{{var.NAME}}}}`, `{{{{target.url}}}}` or a dependency's \
                     `{{{{NAME.FIELD}}}}`"
                )),
            }
        })
        .collect()
}

/// Replaces every `{{…}}` of `s` by `value(inner)` (`seed`, `tier`, `var.accounts`, `db.url`);
/// `None` leaves it as written (validation refused such references before anything ran).
pub fn render_data(s: &str, value: impl Fn(&str) -> Option<String>) -> String {
    super::placeholder::render_placeholders(s, value)
}

/// Pass 2: `[data]` of one profile.
pub(crate) fn build(cx: &Cx<'_>, look: &Look<'_>) -> Option<DataConfig> {
    let s = &SECTION;
    let tier = look.read(cx, s, &TIER);
    let vars = look.read(cx, s, &VARS);
    let steps = look.read(cx, s, &STEPS);
    Some(DataConfig {
        tier: match tier {
            None => None,
            Some(t) => Some(t?),
        },
        vars: match vars {
            None => BTreeMap::new(),
            Some(v) => v?,
        },
        steps: match steps {
            None => Vec::new(),
            Some(s) => s?,
        },
    })
}

/// Pass 2: `[teardown]` of one profile.
pub(crate) fn build_teardown(cx: &Cx<'_>, look: &Look<'_>) -> Option<TeardownConfig> {
    let steps = look.read(cx, &TEARDOWN, &TEARDOWN_STEPS);
    Some(TeardownConfig {
        steps: match steps {
            None => Vec::new(),
            Some(s) => s?,
        },
    })
}

/// What a profile's `[data]` and `[teardown]` steps name, checked against what the profile boots
/// and sets: an SQL step's dependency is booted in it and is PostgreSQL; every template names a
/// booted dependency and a field it has, a `[data] vars` entry the profile sets, a tier it sets,
/// or the target in a step run after it. Every problem is reported, at the value written.
pub(crate) fn check_profile(
    cx: &Cx<'_>,
    look: &Look<'_>,
    profile: &str,
    data: &DataConfig,
    dependencies: &[DependencyConfig],
) {
    let booted: Vec<&str> = dependencies.iter().map(|d| d.name.as_str()).collect();
    for (section, key) in [
        (SECTION.name, STEPS.name),
        (TEARDOWN.name, TEARDOWN_STEPS.name),
    ] {
        let Some(list) = look.get(&[section, key]) else {
            continue;
        };
        let DeValue::Array(items) = list.get() else {
            continue;
        };
        for item in items {
            let item = Val {
                file: list.file,
                v: item,
            };
            let Some(table) = item.as_table() else {
                continue;
            };
            let t = Tbl::new(item.file, item.span(), String::new(), table);
            let name = t
                .get("name")
                .and_then(|n| n.get().as_str().map(str::to_owned))
                .unwrap_or_default();
            let after_target = section == SECTION.name
                && t.get("after").and_then(|a| a.get().as_str()) == Some(DataStage::Target.name());
            if let Some(d) = t.get("dependency")
                && t.get("sql").is_some()
                && let Some(wanted) = d.get().as_str()
            {
                match dependencies.iter().find(|x| x.name == wanted) {
                    None => undeclared(
                        cx,
                        d,
                        wanted,
                        &booted,
                        &format!("step `{name}` of profile `{profile}`"),
                    ),
                    Some(x) if !is_postgres(&x.source) => cx.error(
                        d.file,
                        d.span(),
                        format!(
                            "step `{name}` runs SQL with psql against `{wanted}`, which is not \
                             PostgreSQL"
                        ),
                        Some(
                            "an `sql` step runs against a `postgres` preset or a `postgres://` \
                             url; run other databases' tools as a `command`"
                                .to_owned(),
                        ),
                    ),
                    Some(_) => {}
                }
            }
            for value in template_values(&t) {
                let Some(text) = value.get().as_str() else {
                    continue;
                };
                for r in data_references(text).unwrap_or_default() {
                    check_reference(
                        cx,
                        value,
                        &r,
                        profile,
                        data,
                        dependencies,
                        &booted,
                        after_target,
                        section == TEARDOWN.name,
                    );
                }
            }
        }
    }
}

#[expect(clippy::too_many_arguments, reason = "one place, one profile's facts")]
fn check_reference(
    cx: &Cx<'_>,
    v: Val<'_>,
    r: &DataReference<'_>,
    profile: &str,
    data: &DataConfig,
    dependencies: &[DependencyConfig],
    booted: &[&str],
    after_target: bool,
    teardown: bool,
) {
    match *r {
        DataReference::Seed => {}
        DataReference::Tier => {
            if data.tier.is_none() {
                cx.error(
                    v.file,
                    v.span(),
                    format!("`{{{{tier}}}}`, but profile `{profile}` sets no `[data] tier`"),
                    Some("set `tier` in the profile's `[data]`, e.g. tier = \"10k\"".to_owned()),
                );
            }
        }
        DataReference::Field(VAR, name) => {
            if !data.vars.contains_key(name) {
                let set: Vec<String> = data.vars.keys().map(|k| format!("`{k}`")).collect();
                cx.error(
                    v.file,
                    v.span(),
                    format!("`{{{{var.{name}}}}}`, but profile `{profile}` sets no `[data] vars` entry `{name}`"),
                    Some(if set.is_empty() {
                        format!("add it, e.g. vars = {{ {name} = \"…\" }}")
                    } else {
                        format!("it sets {}", set.join(", "))
                    }),
                );
            }
        }
        DataReference::Field(TARGET, field) => {
            if !after_target {
                cx.error(
                    v.file,
                    v.span(),
                    format!(
                        "`{{{{target.{field}}}}}` in a step that runs {}",
                        if teardown {
                            "after the target has stopped"
                        } else {
                            "before the target starts"
                        }
                    ),
                    Some(if teardown {
                        "a teardown step reaches the dependencies, not the target".to_owned()
                    } else {
                        "add after = \"target\" to run it once the target is ready".to_owned()
                    }),
                );
            } else if !TARGET_FIELDS.contains(&field) {
                cx.error(
                    v.file,
                    v.span(),
                    format!(
                        "unknown field `{field}` of `target`; expected one of {}",
                        TARGET_FIELDS
                            .iter()
                            .map(|f| format!("`{f}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None,
                );
            }
        }
        DataReference::Field(name, field) => match dependencies.iter().find(|d| d.name == name) {
            Some(d) => {
                if let Err(e) = field_available(&d.source, field) {
                    cx.error(
                        v.file,
                        v.span(),
                        format!("`{{{{{name}.{field}}}}}`: {e}"),
                        None,
                    );
                }
            }
            None => undeclared(
                cx,
                v,
                name,
                booted,
                &format!("a template of profile `{profile}`"),
            ),
        },
    }
}

/// Whether psql can run against a dependency running `source`.
fn is_postgres(source: &DependencySource) -> bool {
    match source {
        DependencySource::Preset {
            preset: Preset::Postgres,
            ..
        } => true,
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

    /// A config directory holding `seed.sql`, and the config `text` written beside it, parsed for
    /// `profile`.
    fn parse_beside_sql(
        text: &str,
        profile: &str,
    ) -> (
        tempfile::TempDir,
        Result<crate::config::LoadgateConfig, crate::config::ConfigError>,
    ) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("seed.sql"), "SELECT :'seed';\n").expect("write seed.sql");
        let path = dir.path().join("loadgate.toml");
        let result = crate::config::parse_config_str(&with_workload(text), &path, None, profile);
        (dir, result)
    }

    const DB: &str = "[[dependency]]\nname = \"db\"\npreset = \"postgres\"\nkind = \"process\"\n";

    fn messages(err: &crate::config::ConfigError) -> Vec<String> {
        err.diagnostics()
            .iter()
            .map(|d| d.message.clone())
            .collect()
    }

    #[test]
    fn a_tier_with_its_steps_is_read_and_a_profile_changes_the_tier_alone() {
        let text = format!(
            "{DB}[data]\ntier = \"small\"\nvars = {{ accounts = \"100\" }}\nsteps = [\n  \
             {{ name = \"seed\", sql = [\"seed.sql\"], dependency = \"db\" }},\n  \
             {{ name = \"warm\", command = \"curl\", args = [\"{{{{target.url}}}}/warm?seed={{{{seed}}}}&n={{{{var.accounts}}}}\"], after = \"target\", timeout = \"30s\" }},\n]\n\
             [profile.large]\ninherits = \"default\"\n[profile.large.data]\ntier = \"large\"\nvars = {{ accounts = \"100000\" }}\n"
        );
        let (dir, small) = parse_beside_sql(&text, "default");
        let small = small.expect("valid");
        assert_eq!(small.data.tier.as_deref(), Some("small"));
        assert_eq!(small.data.vars["accounts"], "100");
        assert_eq!(small.data.steps.len(), 2);
        let DataAction::Sql { dependency, files } = &small.data.steps[0].action else {
            panic!("an SQL step: {:?}", small.data.steps[0]);
        };
        assert_eq!(dependency, "db");
        assert_eq!(files[0].path, dir.path().join("seed.sql"));
        assert_eq!(
            files[0].sha256,
            crate::result::hex_sha256(b"SELECT :'seed';\n")
        );
        assert_eq!(small.data.steps[0].timeout, DEFAULT_STEP_TIMEOUT);
        assert_eq!(small.data.steps[1].after, DataStage::Target);
        assert_eq!(small.data.steps[1].timeout, Duration::from_secs(30));
        let large = crate::config::parse_config_str(
            &with_workload(&text),
            &dir.path().join("loadgate.toml"),
            None,
            "large",
        )
        .expect("valid");
        assert_eq!(large.data.tier.as_deref(), Some("large"));
        assert_eq!(large.data.vars["accounts"], "100000");
        assert_eq!(large.data.steps, small.data.steps);
        // Two tiers never share a config hash, so never a baseline: the tier and its variables
        // are all that differ here (`large` inherits `default`).
        use crate::result::{MeasurementMode, config_hash};
        let small_at_large = crate::config::LoadgateConfig {
            profile: large.profile.clone(),
            ..small.clone()
        };
        assert_ne!(
            config_hash(&small_at_large, MeasurementMode::Stored),
            config_hash(&large, MeasurementMode::Stored)
        );
    }

    #[test]
    fn without_data_the_config_hash_is_unchanged_and_the_sections_are_empty() {
        let cfg = parse(&with_workload(""), "default").expect("valid");
        assert!(cfg.data.is_empty());
        assert!(cfg.teardown.steps.is_empty());
    }

    #[test]
    fn a_changed_sql_file_changes_the_config_hash() {
        use crate::result::{MeasurementMode, config_hash};
        let text = format!(
            "{DB}[data]\nsteps = [{{ name = \"seed\", sql = \"seed.sql\", dependency = \"db\" }}]\n"
        );
        let (dir, first) = parse_beside_sql(&text, "default");
        let first = first.expect("valid");
        std::fs::write(dir.path().join("seed.sql"), "SELECT 2;\n").unwrap();
        let again = crate::config::parse_config_str(
            &with_workload(&text),
            &dir.path().join("loadgate.toml"),
            None,
            "default",
        )
        .expect("valid");
        assert_ne!(
            config_hash(&first, MeasurementMode::Stored),
            config_hash(&again, MeasurementMode::Stored)
        );
    }

    #[test]
    fn every_mistake_in_the_steps_is_reported_at_once_where_it_is_written() {
        let text = format!(
            "{DB}[data]\nvars = {{ seed = \"1\", \"2x\" = \"y\" }}\nsteps = [\n  \
             {{ name = \"a\", sql = [\"missing.sql\"], dependency = \"db\" }},\n  \
             {{ name = \"b\", sql = \"seed.sql\", command = \"psql\", dependency = \"db\" }},\n  \
             {{ name = \"c\" }},\n  \
             {{ name = \"d\", command = \"x\", args = [\"{{{{nope}}}}\"] }},\n  \
             {{ name = \"e\", command = \"x\", after = \"later\" }},\n  \
             {{ name = \"e\", command = \"x\" }},\n]\n\
             [teardown]\nsteps = [{{ name = \"drop\", command = \"x\", after = \"target\" }}]\n"
        );
        let (_dir, result) = parse_beside_sql(&text, "default");
        let err = result.expect_err("invalid");
        let got = messages(&err);
        for expected in [
            "`seed` in `data.vars` is set by loadgate",
            "`2x` in `data.vars` is not a variable name",
            "cannot read the SQL file",
            "step `b` of `data.steps` has both `sql` and `command`",
            "step `c` of `data.steps` runs nothing",
            "`{{nope}}` is not a template of a data step",
            "unknown stage `later` in `after` of step `e` of `data.steps`",
            "unknown key `after` in step `drop` of `teardown.steps`",
        ] {
            assert!(
                got.iter().any(|m| m.contains(expected)),
                "{expected:?} not in {got:#?}"
            );
        }
        // Each at the value written: the missing file at its path, on the first step's line.
        let missing = err
            .diagnostics()
            .iter()
            .find(|d| d.message.contains("cannot read the SQL file"))
            .cloned()
            .expect("reported");
        assert_eq!(missing.line, 13, "{missing:?}");
    }

    /// What a step names is checked per profile, all at once: a dependency the profile does not
    /// boot, the target before it runs, a variable or a tier the profile does not set.
    #[test]
    fn what_the_steps_name_is_checked_against_each_profile() {
        let text = format!(
            "{DB}[data]\nsteps = [\n  \
             {{ name = \"f\", sql = \"seed.sql\", dependency = \"cache\" }},\n  \
             {{ name = \"g\", command = \"x\", args = [\"{{{{target.url}}}}\", \"{{{{var.rows}}}}\", \"{{{{tier}}}}\", \"{{{{db.nope}}}}\"] }},\n]\n\
             [teardown]\nsteps = [{{ name = \"drop\", command = \"x\", args = [\"{{{{target.url}}}}\"] }}]\n"
        );
        let (_dir, result) = parse_beside_sql(&text, "default");
        let got = messages(&result.expect_err("invalid"));
        for expected in [
            "step `f` of profile `default` names dependency `cache`, which is not declared",
            "`{{target.url}}` in a step that runs before the target starts",
            "`{{var.rows}}`, but profile `default` sets no `[data] vars` entry `rows`",
            "`{{tier}}`, but profile `default` sets no `[data] tier`",
            "`{{db.nope}}`: unknown field `nope`",
            "`{{target.url}}` in a step that runs after the target has stopped",
        ] {
            assert!(
                got.iter().any(|m| m.contains(expected)),
                "{expected:?} not in {got:#?}"
            );
        }
        // Every profile is checked: the built-in `quick` inherits the top level's steps.
        assert!(
            got.iter().any(|m| m.contains("profile `quick`")),
            "{got:#?}"
        );
    }

    #[test]
    fn sql_runs_against_postgres_only() {
        let text = "[[dependency]]\nname = \"cache\"\ncommand = \"redis-server\"\n\
                    [data]\nsteps = [{ name = \"seed\", sql = \"seed.sql\", dependency = \"cache\" }]\n";
        let (_dir, result) = parse_beside_sql(text, "default");
        let got = messages(&result.expect_err("invalid"));
        assert!(
            got.iter()
                .any(|m| m.contains("runs SQL with psql against `cache`, which is not PostgreSQL")),
            "{got:#?}"
        );
    }

    /// `check` lists a profile's data and teardown, and the listing reads back as them.
    #[test]
    fn the_listing_reads_back_as_the_same_data_and_teardown() {
        let text = format!(
            "{DB}[data]\ntier = \"small\"\nvars = {{ accounts = \"100\" }}\nsteps = [\n  \
             {{ name = \"seed\", sql = [\"seed.sql\"], dependency = \"db\" }},\n  \
             {{ name = \"warm\", command = \"sh\", args = [\"-c\", \"echo {{{{seed}}}}\"], env = {{ N = \"{{{{var.accounts}}}}\" }}, after = \"target\" }},\n]\n\
             [teardown]\nsteps = [{{ name = \"drop\", sql = \"seed.sql\", dependency = \"db\", timeout = \"10s\" }}]\n"
        );
        let (dir, cfg) = parse_beside_sql(&text, "default");
        let cfg = cfg.expect("valid");
        assert_eq!(cfg.teardown.steps[0].timeout, Duration::from_secs(10));
        let listing = crate::config::render_resolved(&cfg);
        assert!(
            listing.contains("\n[data]\ntier = \"small\"\n"),
            "{listing}"
        );
        assert!(listing.contains("\n[teardown]\nsteps = [\n"), "{listing}");
        let again = crate::config::parse_config_str(
            &listing,
            &dir.path().join("loadgate.toml"),
            None,
            "default",
        )
        .unwrap_or_else(|e| panic!("{listing}\n{e}"));
        assert_eq!(again.data, cfg.data);
        assert_eq!(again.teardown, cfg.teardown);
    }

    #[test]
    fn templates_are_read_and_filled_in() {
        assert_eq!(
            data_references("{{seed}}-{{ tier }}-{{var.n}}-{{db.url}}").unwrap(),
            vec![
                DataReference::Seed,
                DataReference::Tier,
                DataReference::Field("var", "n"),
                DataReference::Field("db", "url"),
            ]
        );
        assert!(data_references("{{seed").is_err());
        let filled = render_data(
            "n={{var.n}} s={{seed}} x={{other.y}}",
            |inner| match inner {
                "var.n" => Some("10".to_owned()),
                "seed" => Some("42".to_owned()),
                _ => None,
            },
        );
        assert_eq!(filled, "n=10 s=42 x={{other.y}}");
    }
}
