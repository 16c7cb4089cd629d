//! Validation: walks the parsed TOML (with spans) of the user's config and of the built-in
//! defaults, reports every problem at once, and builds the [`LoadgateConfig`] of one profile.
//!
//! Two passes share the same readers. The first reads every key of every table the user wrote —
//! top level and every `[profile.*]` — so a mistake in a profile that is not selected is still
//! found. The second resolves each profile key by key through its layers (see `defaults.toml`) and
//! checks what needs the whole picture: the target, the workload graph, steps against hold. Every
//! profile is resolved, so `check` proves all of them; identical problems are reported once.

use super::error::{ConfigError, Diagnostic, Sources};
use super::model::{self, RawEntry, RawOp};
use super::source::{
    Cx, SourceFile, Tbl, Val, array, duration, integer_in, positive_duration, positive_number,
    share, size, size_rate, string, string_map, suggest, unknown_help,
};
use super::types::*;
use super::units::format_duration;
use std::{
    collections::BTreeMap,
    ops::Range,
    path::{Path, PathBuf},
};
use toml::de::{DeTable, DeValue};

/// How diagnostics name the built-in defaults file.
pub const BUILTIN_PATH: &str = "<built-in defaults>";

/// The built-in defaults and profiles.
pub const BUILTIN_CONFIG: &str = include_str!("defaults.toml");

/// The profiles every configuration has.
pub const BUILTIN_PROFILES: &[&str] = &["default", "quick", "ci", "full"];

const SECTIONS: &[&str] = &[
    "target",
    "slo",
    "workload",
    "generator",
    "ramp",
    "soak",
    "abort",
    "gate",
];
const TOP_KEYS: &[&str] = &[
    "target",
    "slo",
    "workload",
    "generator",
    "ramp",
    "soak",
    "abort",
    "gate",
    "profile",
];
const PROFILE_KEYS: &[&str] = &[
    "inherits",
    "target",
    "slo",
    "workload",
    "generator",
    "ramp",
    "soak",
    "abort",
    "gate",
];
const TARGET_KEYS: &[&str] = &[
    "bin",
    "image",
    "dockerfile",
    "context",
    "url",
    "port",
    "ready",
    "cpus",
    "memory",
    "env",
    "args",
];
/// What a profile may not change: which service is under test.
const TARGET_FIXED_KEYS: &[&str] = &["bin", "image", "dockerfile", "context"];
const SOURCE_KEYS: &[&str] = &["bin", "image", "dockerfile", "url"];
const READY_KEYS: &[&str] = &["http", "timeout", "interval"];
const LATENCY_KEYS: &[(&str, f64)] = &[
    ("p50", 0.5),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p999", 0.999),
];
const SLO_KEYS: &[&str] = &[
    "p50",
    "p90",
    "p95",
    "p99",
    "p999",
    "error-rate",
    "min-requests",
];
const WORKLOAD_KEYS: &[&str] = &["seed", "sessions-per-sec", "entry", "operation"];
/// `generator.connections`: 0 (on demand) up to the engine's cap.
const CONNECTIONS: std::ops::RangeInclusive<i64> = 0..=MAX_CONNECTIONS as i64;

const GENERATOR_KEYS: &[&str] = &[
    "timeout",
    "max-in-flight",
    "max-lag",
    "max-drop-rate",
    "connections",
];
const RAMP_KEYS: &[&str] = &["steps", "hold", "warmup", "refine"];
const SOAK_KEYS: &[&str] = &["duration", "at", "window"];
const ABORT_KEYS: &[&str] = &["error-rate", "p99", "max-duration"];
const GATE_KEYS: &[&str] = &["p50", "p99", "capacity", "error-rate", "rss-slope"];

fn section_keys(section: &str) -> &'static [&'static str] {
    match section {
        "target" => TARGET_KEYS,
        "slo" => SLO_KEYS,
        "workload" => WORKLOAD_KEYS,
        "generator" => GENERATOR_KEYS,
        "ramp" => RAMP_KEYS,
        "soak" => SOAK_KEYS,
        "abort" => ABORT_KEYS,
        _ => GATE_KEYS,
    }
}

/// Where in a file the user's configuration lives.
pub(crate) enum Location {
    /// The whole file (a `loadgate.toml`).
    File,
    /// `[package.metadata.loadgate]` of a `Cargo.toml`.
    Metadata,
}

/// Parses and validates a standalone `loadgate.toml` text and resolves `profile`.
///
/// `path` is only used to name the file in diagnostics and to resolve relative paths in it;
/// `package` is the cargo package the config belongs to, if any (`bin` is checked against its bins).
pub fn parse_config_str(
    text: &str,
    path: &Path,
    package: Option<PackageRef>,
    profile: &str,
) -> Result<LoadgateConfig, ConfigError> {
    validate(
        SourceFile::new(path.to_path_buf(), text.to_owned()),
        Location::File,
        package,
        profile,
    )
}

/// One layer of the lookup: a table whose keys are section names.
struct Layer<'a> {
    file: usize,
    root: &'a DeTable<'a>,
    /// A user profile or a built-in profile, rather than a top level.
    profile: bool,
    /// The built-in top level (the defaults).
    defaults: bool,
}

impl<'a> Layer<'a> {
    fn get(&self, path: &[&str]) -> Option<Val<'a>> {
        let (last, parents) = path.split_last()?;
        let mut table = self.root;
        for key in parents {
            match table.get(*key)?.get_ref() {
                DeValue::Table(t) => table = t,
                _ => return None,
            }
        }
        table.get(*last).map(|v| Val { file: self.file, v })
    }
}

/// The layers of one profile, highest priority first.
struct Look<'a> {
    layers: Vec<Layer<'a>>,
    /// Where to report a problem in the user's config that has no better place.
    anchor: (usize, Range<usize>),
    /// How messages name a section, e.g. `[package.metadata.loadgate.workload]`.
    prefix: &'a str,
}

impl<'a> Look<'a> {
    fn get(&self, path: &[&str]) -> Option<Val<'a>> {
        self.layers.iter().find_map(|l| l.get(path))
    }

    fn get_where(&self, path: &[&str], keep: impl Fn(&Layer<'a>) -> bool) -> Option<Val<'a>> {
        self.layers
            .iter()
            .filter(|l| keep(l))
            .find_map(|l| l.get(path))
    }

    /// The user's table of `section` (for a missing key), else the anchor.
    fn section_anchor(&self, section: &str) -> (usize, Range<usize>) {
        self.layers
            .iter()
            .filter(|l| l.file == 0)
            .find_map(|l| l.get(&[section]))
            .map_or_else(|| self.anchor.clone(), |v| (v.file, v.span()))
    }

    /// Looks up `section.key` and reads it; a missing key is reported.
    fn need<T>(
        &self,
        cx: &Cx<'_>,
        section: &str,
        key: &str,
        read: impl FnOnce(Val<'a>) -> Option<T>,
    ) -> Option<T> {
        let typo = || {
            self.layers
                .iter()
                .filter(|l| l.file == 0)
                .filter_map(|l| l.get(&[section]))
                .filter_map(|v| {
                    v.as_table()
                        .map(|t| Tbl::new(v.file, v.span(), String::new(), t))
                })
                .any(|t| t.has_typo_of(key))
        };
        match self.get(&[section, key]) {
            Some(v) => read(v),
            // The unknown key that is probably this one is reported already.
            None if typo() => None,
            None => {
                let (file, span) = self.section_anchor(section);
                cx.error(
                    file,
                    span,
                    format!("`[{}{section}]` has no `{key}`", self.prefix),
                    None,
                );
                None
            }
        }
    }
}

pub(crate) fn validate(
    user: SourceFile,
    location: Location,
    package: Option<PackageRef>,
    profile: &str,
) -> Result<LoadgateConfig, ConfigError> {
    let files = [
        user,
        SourceFile::new(PathBuf::from(BUILTIN_PATH), BUILTIN_CONFIG.to_owned()),
    ];
    let cx = Cx::new(&files);
    let result = validate_in(&cx, &location, package, profile);
    let diagnostics = cx.into_diagnostics();
    match result {
        Err(e) => Err(e),
        Ok(Some(config)) if diagnostics.is_empty() => Ok(config),
        Ok(_) => Err(invalid(diagnostics, &files)),
    }
}

fn invalid(mut diagnostics: Vec<Diagnostic>, files: &[SourceFile]) -> ConfigError {
    if diagnostics.is_empty() {
        // Only reachable through a bug: no config and no reason. Say so rather than pass.
        diagnostics.push(files[0].diagnostic(
            0..0,
            "the configuration could not be resolved".to_owned(),
            None,
        ));
    }
    let sources: Sources = files
        .iter()
        .filter(|f| diagnostics.iter().any(|d| d.path == f.path))
        .map(|f| (f.path.clone(), f.text.clone()))
        .collect();
    ConfigError::Invalid {
        diagnostics,
        sources,
    }
}

/// Parses a file, reporting every syntax error.
fn parse<'a>(cx: &Cx<'_>, file: usize, text: &'a str) -> Option<DeTable<'a>> {
    let (table, errors) = DeTable::parse_recoverable(text);
    for e in &errors {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().trim_end_matches('.');
        let (first, rest) = message.split_once('\n').unwrap_or((message, ""));
        let help = (!rest.trim().is_empty()).then(|| rest.trim().to_owned());
        cx.error(file, span, format!("invalid TOML: {first}"), help);
    }
    errors.is_empty().then(|| table.into_inner())
}

fn validate_in(
    cx: &Cx<'_>,
    location: &Location,
    package: Option<PackageRef>,
    profile: &str,
) -> Result<Option<LoadgateConfig>, ConfigError> {
    let Some(user_doc) = parse(cx, 0, &cx.files[0].text) else {
        return Ok(None);
    };
    let Some(builtin_doc) = parse(cx, 1, &cx.files[1].text) else {
        return Ok(None);
    };
    let empty = DeTable::new();
    let (user_root, anchor, prefix): (&DeTable<'_>, Range<usize>, &str) = match location {
        Location::File => (&user_doc, 0..0, ""),
        Location::Metadata => {
            let found = Layer {
                file: 0,
                root: &user_doc,
                profile: false,
                defaults: false,
            }
            .get(&["package", "metadata", "loadgate"]);
            match found {
                Some(v) => match v.as_table() {
                    Some(t) => (t, v.span(), "package.metadata.loadgate."),
                    None => {
                        cx.error(
                            0,
                            v.span(),
                            format!(
                                "expected a table, found {}",
                                super::source::describe(v.get())
                            ),
                            None,
                        );
                        return Ok(None);
                    }
                },
                None => (&empty, 0..0, "package.metadata.loadgate."),
            }
        }
    };
    let root_name = if prefix.is_empty() {
        "the top level".to_owned()
    } else {
        "`[package.metadata.loadgate]`".to_owned()
    };
    let user = Tbl::new(0, anchor.clone(), root_name, user_root);
    user.check_keys(cx, TOP_KEYS);
    let builtin = Tbl::new(1, 0..0, "the built-in defaults".to_owned(), &builtin_doc);

    // Pass 1: every table as written.
    for (root, file) in [(&user, 0), (&builtin, 1)] {
        let pre = if file == 0 { prefix } else { "" };
        check_sections(cx, root, pre, None);
    }
    let user_profiles = profiles_of(cx, &user, prefix);
    let builtin_profiles = profiles_of(cx, &builtin, "");
    for (name, table) in user_profiles.iter().chain(&builtin_profiles) {
        table.check_keys(cx, PROFILE_KEYS);
        check_sections(cx, table, &format!("{prefix}profile.{name}."), Some(name));
    }
    let mut available: Vec<String> = BUILTIN_PROFILES.iter().map(|s| s.to_string()).collect();
    for name in builtin_profiles.keys().chain(user_profiles.keys()) {
        if !available.contains(name) {
            available.push(name.clone());
        }
    }
    check_inherits(cx, &user_profiles, &available);
    if !available.iter().any(|a| a == profile) {
        return Err(ConfigError::UnknownProfile {
            name: profile.to_owned(),
            available,
        });
    }

    // Pass 2: resolve every profile; keep the one asked for.
    let mut selected = None;
    for name in &available {
        let look = Look {
            layers: layers_of(
                name,
                &user_profiles,
                &builtin_profiles,
                user_root,
                &builtin_doc,
            ),
            anchor: (0, anchor.clone()),
            prefix,
        };
        let config = build(cx, &look, name, package.clone());
        if name == profile {
            selected = config;
        }
    }
    Ok(selected)
}

/// The `[profile.*]` tables of a root, by name.
fn profiles_of<'a>(cx: &Cx<'_>, root: &Tbl<'a>, prefix: &str) -> BTreeMap<String, Tbl<'a>> {
    let mut out = BTreeMap::new();
    if let Some(v) = root.get("profile")
        && let Some(profiles) =
            Tbl::of(cx, v, format!("`[{prefix}profile]`"), "a table of profiles")
    {
        for (name, value) in &profiles.entries {
            let label = format!("`[{prefix}profile.{}]`", name.get_ref());
            if let Some(t) = Tbl::of(cx, *value, label, "a table (a profile)") {
                out.insert(name.get_ref().to_string(), t);
            }
        }
    }
    out
}

/// The layers of `profile`, highest priority first.
fn layers_of<'a>(
    profile: &str,
    user_profiles: &BTreeMap<String, Tbl<'a>>,
    builtin_profiles: &BTreeMap<String, Tbl<'a>>,
    user_root: &'a DeTable<'a>,
    builtin_root: &'a DeTable<'a>,
) -> Vec<Layer<'a>> {
    let mut layers = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut name = Some(profile.to_owned());
    while let Some(current) = name.take() {
        if seen.contains(&current) {
            // A cycle; reported once by `check_inherits`.
            break;
        }
        seen.push(current.clone());
        for (profiles, file) in [(user_profiles, 0), (builtin_profiles, 1)] {
            if let Some(t) = profiles.get(&current) {
                layers.push(Layer {
                    file,
                    root: t.raw,
                    profile: true,
                    defaults: false,
                });
            }
        }
        name = user_profiles
            .get(&current)
            .and_then(|t| t.get("inherits"))
            .and_then(|v| v.get().as_str().map(str::to_owned));
    }
    layers.push(Layer {
        file: 0,
        root: user_root,
        profile: false,
        defaults: false,
    });
    layers.push(Layer {
        file: 1,
        root: builtin_root,
        profile: false,
        defaults: true,
    });
    layers
}

/// Reports `inherits` values that name no profile and inheritance cycles (each cycle once).
fn check_inherits(cx: &Cx<'_>, user_profiles: &BTreeMap<String, Tbl<'_>>, available: &[String]) {
    let parent = |name: &str| -> Option<(String, Val<'_>)> {
        let v = user_profiles.get(name)?.get("inherits")?;
        Some((v.get().as_str()?.to_owned(), v))
    };
    for (name, table) in user_profiles {
        let Some(v) = table.get("inherits") else {
            continue;
        };
        let Some(target) = string(cx, v, "a profile name") else {
            continue;
        };
        if !available.iter().any(|a| a == target) {
            let help = suggest(target, available.iter().map(String::as_str))
                .map(|b| format!("did you mean `{b}`?"))
                .unwrap_or_else(|| format!("available profiles: {}", available.join(", ")));
            cx.error(
                v.file,
                v.span(),
                format!("profile `{name}` inherits from an unknown profile `{target}`"),
                Some(help),
            );
            continue;
        }
        // Follow the chain; a cycle through `name` is reported at the smallest name in it.
        let mut chain = vec![name.clone()];
        let mut current = target.to_owned();
        loop {
            if current == *name {
                chain.push(current);
                if chain[..chain.len() - 1].iter().all(|c| c >= name) {
                    cx.error(
                        v.file,
                        v.span(),
                        format!("profile inheritance makes a cycle: {}", chain.join(" → ")),
                        Some("remove one of these `inherits`".to_owned()),
                    );
                }
                break;
            }
            if chain.contains(&current) {
                break;
            }
            chain.push(current.clone());
            match parent(&current) {
                Some((next, _)) => current = next,
                None => break,
            }
        }
    }
}

/// Pass 1 over one root (top level, or one profile): every section and key as written.
fn check_sections(cx: &Cx<'_>, root: &Tbl<'_>, prefix: &str, profile: Option<&str>) {
    for section in SECTIONS {
        let Some(v) = root.get(section) else { continue };
        let Some(t) = Tbl::of(cx, v, format!("`[{prefix}{section}]`"), "a table") else {
            continue;
        };
        let allowed = section_keys(section);
        for (key, value) in &t.entries {
            let key_name = key.get_ref().as_ref();
            if profile.is_some() && *section == "target" && TARGET_FIXED_KEYS.contains(&key_name) {
                cx.error(
                    t.file,
                    key.span(),
                    format!("`{key_name}` cannot be set in a profile"),
                    Some("a profile changes how the target is measured, not which target; set it in the top-level `[target]`".to_owned()),
                );
            } else if !allowed.contains(&key_name) {
                cx.error(
                    t.file,
                    key.span(),
                    format!("unknown key `{key_name}` in {}", t.name),
                    unknown_help(key_name, allowed),
                );
            } else {
                check_value(cx, section, key_name, *value, &t.name);
            }
        }
        if profile.is_none() && *section == "target" {
            let given: Vec<&str> = SOURCE_KEYS
                .iter()
                .copied()
                .filter(|k| t.get(k).is_some())
                .collect();
            for extra in given.iter().skip(1) {
                let span = t.key_span(extra).unwrap_or_else(|| t.span.clone());
                cx.error(
                    t.file,
                    span,
                    format!("`{extra}` and `{}` both name the target", given[0]),
                    Some("give only one of `bin`, `image`, `dockerfile` or `url`".to_owned()),
                );
            }
            if let Some(span) = t.key_span("context")
                && t.get("dockerfile").is_none()
            {
                cx.error(
                    t.file,
                    span,
                    "`context` is only used with `dockerfile`",
                    None,
                );
            }
        }
    }
}

/// Reads one key's value for its problems alone (the resolution pass reads it again).
fn check_value(cx: &Cx<'_>, section: &str, key: &str, v: Val<'_>, table: &str) {
    match (section, key) {
        ("target", "bin" | "image" | "dockerfile" | "context") => {
            non_empty(cx, v, key);
        }
        ("target", "url") => {
            url(cx, v);
        }
        ("target", "port") => {
            port(cx, v);
        }
        ("target", "ready") => {
            if let Some(t) = Tbl::of(
                cx,
                v,
                format!("`ready` in {table}"),
                "a table like { http = \"/health\" }",
            ) {
                t.check_keys(cx, READY_KEYS);
                for (k, value) in &t.entries {
                    match k.get_ref().as_ref() {
                        "http" => {
                            ready_path(cx, *value);
                        }
                        "timeout" => {
                            positive_duration(cx, *value, "`ready.timeout`");
                        }
                        "interval" => {
                            positive_duration(cx, *value, "`ready.interval`");
                        }
                        _ => {}
                    }
                }
            }
        }
        ("target", "cpus") => {
            positive_number(cx, v, "`cpus`");
        }
        ("target", "memory") => {
            size(cx, v);
        }
        ("target", "env") => {
            env(cx, v);
        }
        ("target", "args") => {
            args(cx, v);
        }
        ("slo", "error-rate") | ("generator", "max-drop-rate") | ("gate", "error-rate") => {
            share(cx, v, &format!("`{key}`"), Some(1.0));
        }
        ("abort", "error-rate") => {
            positive_share(cx, v, "`abort.error-rate`", Some(1.0));
        }
        ("slo", "min-requests") => {
            integer_in(cx, v, "`min-requests`", 0..=i64::MAX);
        }
        ("slo", _) | ("abort", "p99" | "max-duration") | ("generator", "timeout") => {
            positive_duration(cx, v, &format!("`{key}`"));
        }
        ("workload", "seed") => {
            integer_in(cx, v, "`seed`", 0..=i64::MAX);
        }
        ("workload", "sessions-per-sec") => {
            positive_number(cx, v, "`sessions-per-sec`");
        }
        ("workload", "entry") => {
            model::entries(cx, v);
        }
        ("workload", "operation") => {
            model::operations(cx, v, "workload");
        }
        ("generator", "max-in-flight") => {
            integer_in(cx, v, "`max-in-flight`", 1..=i64::MAX);
        }
        ("generator", "connections") => {
            integer_in(cx, v, "`connections`", CONNECTIONS);
        }
        ("generator", "max-lag") | ("ramp", "warmup") | ("soak", "duration") => {
            duration(cx, v);
        }
        ("ramp", "steps") => {
            steps(cx, v);
        }
        ("ramp", "hold") | ("soak", "window") => {
            positive_duration(cx, v, &format!("`{key}`"));
        }
        ("ramp", "refine") => {
            integer_in(cx, v, "`refine`", 0..=20);
        }
        ("soak", "at") => {
            positive_share(cx, v, "`soak.at`", None);
        }
        ("gate", "p50" | "p99") => {
            share(cx, v, &format!("`gate.{key}`"), None);
        }
        ("gate", "capacity") => {
            share(cx, v, "`gate.capacity`", Some(1.0));
        }
        ("gate", "rss-slope") => {
            size_rate(cx, v);
        }
        _ => {}
    }
}

// The readers of single keys, shared by both passes.

fn non_empty<'a>(cx: &Cx<'_>, v: Val<'a>, key: &str) -> Option<&'a str> {
    let s = string(cx, v, "a string")?;
    if s.trim().is_empty() {
        cx.error(v.file, v.span(), format!("`{key}` must not be empty"), None);
        return None;
    }
    Some(s)
}

fn url(cx: &Cx<'_>, v: Val<'_>) -> Option<String> {
    let s = string(cx, v, "a URL like \"http://127.0.0.1:8080\"")?;
    match s.parse::<http::Uri>() {
        Ok(uri) if uri.scheme_str() == Some("http") && uri.authority().is_some() => {
            Some(s.trim_end_matches('/').to_owned())
        }
        Ok(uri) if uri.scheme_str() == Some("https") => {
            cx.error(
                v.file,
                v.span(),
                format!("{s:?} uses https, which loadgate does not speak"),
                Some("load goes to a service on loopback over plain http".to_owned()),
            );
            None
        }
        _ => {
            cx.error(
                v.file,
                v.span(),
                format!("{s:?} is not an http URL"),
                Some("write e.g. \"http://127.0.0.1:8080\"".to_owned()),
            );
            None
        }
    }
}

fn port(cx: &Cx<'_>, v: Val<'_>) -> Option<u16> {
    integer_in(cx, v, "a port", 1..=65535).map(|p| p as u16)
}

fn ready_path(cx: &Cx<'_>, v: Val<'_>) -> Option<String> {
    let s = string(cx, v, "a path like \"/health\"")?;
    if !s.starts_with('/') {
        cx.error(
            v.file,
            v.span(),
            format!("path {s:?} must start with `/`"),
            None,
        );
        return None;
    }
    Some(s.to_owned())
}

fn env(cx: &Cx<'_>, v: Val<'_>) -> Option<BTreeMap<String, String>> {
    Some(
        string_map(cx, v, "`env`".to_owned())?
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect(),
    )
}

fn args(cx: &Cx<'_>, v: Val<'_>) -> Option<Vec<String>> {
    let items = array(cx, v, "an array of strings")?;
    let mut out = Vec::new();
    for item in items {
        out.push(string(cx, item, "a string")?.to_owned());
    }
    Some(out)
}

fn positive_share(cx: &Cx<'_>, v: Val<'_>, what: &str, max: Option<f64>) -> Option<f64> {
    let x = share(cx, v, what, max)?;
    if x > 0.0 {
        Some(x)
    } else {
        cx.error(
            v.file,
            v.span(),
            format!("{what} must be more than 0%"),
            None,
        );
        None
    }
}

fn steps(cx: &Cx<'_>, v: Val<'_>) -> Option<Vec<f64>> {
    let items = array(cx, v, "an array of percentages like [\"50%\", \"100%\"]")?;
    if items.is_empty() {
        cx.error(v.file, v.span(), "`steps` lists no steps", None);
        return None;
    }
    let mut out: Vec<f64> = Vec::new();
    for item in items {
        let step = positive_share(cx, item, "a step", None)?;
        if let Some(&last) = out.last()
            && step <= last
        {
            cx.error(
                item.file,
                item.span(),
                "ramp steps must increase",
                Some("list them from the lightest load to the heaviest".to_owned()),
            );
            return None;
        }
        out.push(step);
    }
    Some(out)
}

/// Pass 2: one profile, key by key through its layers.
fn build(
    cx: &Cx<'_>,
    look: &Look<'_>,
    profile: &str,
    package: Option<PackageRef>,
) -> Option<LoadgateConfig> {
    let target = build_target(cx, look, package.as_ref());
    let slo = build_slo(cx, look);
    let workload = build_workload(cx, look);
    let generator = (|| {
        Some(GeneratorConfig {
            timeout: look.need(cx, "generator", "timeout", |v| {
                positive_duration(cx, v, "`timeout`")
            })?,
            max_in_flight: look.need(cx, "generator", "max-in-flight", |v| {
                integer_in(cx, v, "`max-in-flight`", 1..=i64::MAX)
            })? as usize,
            max_lag: look.need(cx, "generator", "max-lag", |v| duration(cx, v))?,
            max_drop_rate: look.need(cx, "generator", "max-drop-rate", |v| {
                share(cx, v, "`max-drop-rate`", Some(1.0))
            })?,
            connections: look.need(cx, "generator", "connections", |v| {
                integer_in(cx, v, "`connections`", CONNECTIONS)
            })? as usize,
        })
    })();
    let ramp = build_ramp(cx, look, profile);
    let soak = (|| {
        Some(SoakConfig {
            duration: look.need(cx, "soak", "duration", |v| duration(cx, v))?,
            at: look.need(cx, "soak", "at", |v| {
                positive_share(cx, v, "`soak.at`", None)
            })?,
            window: look.need(cx, "soak", "window", |v| {
                positive_duration(cx, v, "`window`")
            })?,
        })
    })();
    let abort = (|| {
        Some(AbortConfig {
            error_rate_limit: look.need(cx, "abort", "error-rate", |v| {
                positive_share(cx, v, "`abort.error-rate`", Some(1.0))
            })?,
            p99_limit: look.need(cx, "abort", "p99", |v| positive_duration(cx, v, "`p99`"))?,
            max_duration: look.need(cx, "abort", "max-duration", |v| {
                positive_duration(cx, v, "`max-duration`")
            })?,
        })
    })();
    let gate = (|| {
        Some(GateConfig {
            p50_change: look.need(cx, "gate", "p50", |v| share(cx, v, "`gate.p50`", None))?,
            p99_change: look.need(cx, "gate", "p99", |v| share(cx, v, "`gate.p99`", None))?,
            capacity_loss: look.need(cx, "gate", "capacity", |v| {
                share(cx, v, "`gate.capacity`", Some(1.0))
            })?,
            error_rate_increase: look.need(cx, "gate", "error-rate", |v| {
                share(cx, v, "`error-rate`", Some(1.0))
            })?,
            rss_slope_bytes_per_sec: look.need(cx, "gate", "rss-slope", |v| size_rate(cx, v))?,
        })
    })();
    Some(LoadgateConfig {
        source: ConfigSource {
            path: cx.files[0].path.clone(),
            package,
        },
        profile: profile.to_owned(),
        target: target?,
        slo: slo?,
        workload: workload?,
        generator: generator?,
        ramp: ramp?,
        soak: soak?,
        abort: abort?,
        gate: gate?,
    })
}

fn build_target(
    cx: &Cx<'_>,
    look: &Look<'_>,
    package: Option<&PackageRef>,
) -> Option<TargetConfig> {
    let port = look.need(cx, "target", "port", |v| port(cx, v));
    let ready = (|| {
        Some(ReadyConfig {
            path: look
                .get(&["target", "ready", "http"])
                .and_then(|v| ready_path(cx, v))?,
            timeout: look
                .get(&["target", "ready", "timeout"])
                .and_then(|v| positive_duration(cx, v, "`ready.timeout`"))?,
            interval: look
                .get(&["target", "ready", "interval"])
                .and_then(|v| positive_duration(cx, v, "`ready.interval`"))?,
        })
    })();
    let cpus = look
        .get(&["target", "cpus"])
        .map(|v| positive_number(cx, v, "`cpus`"));
    let memory = look.get(&["target", "memory"]).map(|v| size(cx, v));
    let env = look
        .get(&["target", "env"])
        .map(|v| env(cx, v))
        .unwrap_or(Some(BTreeMap::new()));
    let args = look
        .get(&["target", "args"])
        .map(|v| args(cx, v))
        .unwrap_or(Some(Vec::new()));
    let source = target_source(cx, look, package, port);
    Some(TargetConfig {
        source: source?,
        port: port?,
        ready: ready?,
        cpus: match cpus {
            Some(c) => Some(c?),
            None => None,
        },
        memory_bytes: match memory {
            Some(m) => Some(m?),
            None => None,
        },
        env: env?,
        args: args?,
    })
}

fn target_source(
    cx: &Cx<'_>,
    look: &Look<'_>,
    package: Option<&PackageRef>,
    port: Option<u16>,
) -> Option<TargetSource> {
    // A profile may point at a running service instead; otherwise the top level says what to run.
    if let Some(v) = look.get_where(&["target", "url"], |l| l.profile) {
        return url(cx, v).map(|url| TargetSource::Url { url });
    }
    let top = |key: &str| look.get_where(&["target", key], |l| !l.profile && !l.defaults);
    if let Some(v) = top("bin") {
        let name = non_empty(cx, v, "bin")?;
        if let Some(package) = package
            && !package.bins.iter().any(|b| b == name)
        {
            let help = if package.bins.is_empty() {
                "it has no binary targets; use `image`, `dockerfile` or `url` instead".to_owned()
            } else {
                let list = package
                    .bins
                    .iter()
                    .map(|b| format!("`{b}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                match suggest(name, package.bins.iter().map(String::as_str)) {
                    Some(best) => format!("did you mean `{best}`? its binaries are: {list}"),
                    None => format!("its binaries are: {list}"),
                }
            };
            cx.error(
                v.file,
                v.span(),
                format!("package `{}` has no binary target `{name}`", package.name),
                Some(help),
            );
            return None;
        }
        return Some(TargetSource::Bin {
            name: name.to_owned(),
        });
    }
    if let Some(v) = top("image") {
        return non_empty(cx, v, "image").map(|r| TargetSource::Image {
            reference: r.to_owned(),
        });
    }
    let base = cx.files[0]
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let Some(v) = top("dockerfile") {
        let path = base.join(non_empty(cx, v, "dockerfile")?);
        let context = match top("context") {
            Some(c) => base.join(non_empty(cx, c, "context")?),
            None => path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        return Some(TargetSource::Dockerfile { path, context });
    }
    if let Some(v) = top("url") {
        return url(cx, v).map(|url| TargetSource::Url { url });
    }
    match package {
        Some(p) if p.bins.len() == 1 => Some(TargetSource::Bin {
            name: p.bins[0].clone(),
        }),
        Some(p) => {
            let (file, span) = look.section_anchor("target");
            let message = if p.bins.is_empty() {
                format!("no target: package `{}` has no binary target", p.name)
            } else {
                format!(
                    "no target: package `{}` has several binaries ({})",
                    p.name,
                    p.bins.join(", ")
                )
            };
            cx.error(
                file,
                span,
                message,
                Some(format!(
                    "set one of `bin`, `image`, `dockerfile` or `url` in `[{}target]`",
                    look.prefix
                )),
            );
            None
        }
        // A standalone config without a target drives a service already running on loopback.
        None => port.map(|port| TargetSource::Url {
            url: format!("http://127.0.0.1:{port}"),
        }),
    }
}

fn build_slo(cx: &Cx<'_>, look: &Look<'_>) -> Option<SloConfig> {
    // The default p99 applies only when nothing above the defaults names a latency limit.
    let user_given = LATENCY_KEYS
        .iter()
        .any(|(k, _)| look.get_where(&["slo", k], |l| !l.defaults).is_some());
    let mut latency = Vec::new();
    let mut ok = true;
    for (key, quantile) in LATENCY_KEYS {
        let v = if user_given {
            look.get_where(&["slo", key], |l| !l.defaults)
        } else {
            look.get(&["slo", key])
        };
        if let Some(v) = v {
            match positive_duration(cx, v, &format!("`{key}`")) {
                Some(limit) => latency.push(LatencyLimit {
                    quantile: *quantile,
                    limit,
                }),
                None => ok = false,
            }
        }
    }
    let error_rate = look.need(cx, "slo", "error-rate", |v| {
        share(cx, v, "`error-rate`", Some(1.0))
    });
    let min_requests = look.need(cx, "slo", "min-requests", |v| {
        integer_in(cx, v, "`min-requests`", 0..=i64::MAX)
    });
    if !ok {
        return None;
    }
    Some(SloConfig {
        latency,
        error_rate: error_rate?,
        min_requests: min_requests? as u64,
    })
}

fn build_workload(cx: &Cx<'_>, look: &Look<'_>) -> Option<WorkloadConfig> {
    let seed = look.need(cx, "workload", "seed", |v| {
        integer_in(cx, v, "`seed`", 0..=i64::MAX)
    });
    let rate = look.need(cx, "workload", "sessions-per-sec", |v| {
        positive_number(cx, v, "`sessions-per-sec`")
    });
    let ops: Vec<RawOp> = look
        .get(&["workload", "operation"])
        .map(|v| model::operations(cx, v, "workload"))
        .unwrap_or_default();
    let entry: Option<Option<Vec<RawEntry>>> = look
        .get(&["workload", "entry"])
        .map(|v| model::entries(cx, v));
    let resolved = match entry {
        Some(None) => None,
        Some(Some(entry)) => model::resolve(cx, &ops, Some(entry), look.section_anchor("workload")),
        None => model::resolve(cx, &ops, None, look.section_anchor("workload")),
    };
    let (entry, operations) = resolved?;
    Some(WorkloadConfig {
        seed: seed? as u64,
        sessions_per_sec: rate?,
        entry,
        operations,
    })
}

fn build_ramp(cx: &Cx<'_>, look: &Look<'_>, profile: &str) -> Option<RampConfig> {
    let steps = look.need(cx, "ramp", "steps", |v| steps(cx, v));
    let hold = look.need(cx, "ramp", "hold", |v| positive_duration(cx, v, "`hold`"));
    let warmup_val = look.get(&["ramp", "warmup"]);
    let warmup = look.need(cx, "ramp", "warmup", |v| duration(cx, v));
    let refine = look.need(cx, "ramp", "refine", |v| {
        integer_in(cx, v, "`refine`", 0..=20)
    });
    let (hold, warmup) = (hold?, warmup?);
    if warmup >= hold
        && let Some(v) = warmup_val
    {
        cx.error(
            v.file,
            v.span(),
            format!(
                "in profile `{profile}`, `warmup` ({}) is not shorter than `hold` ({})",
                format_duration(warmup),
                format_duration(hold)
            ),
            Some("the warmup is excluded from each step's figures, so it must leave some of the hold to measure".to_owned()),
        );
        return None;
    }
    Some(RampConfig {
        steps: steps?,
        hold,
        warmup,
        refine: refine? as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use indoc::indoc;
    use std::time::Duration;
    use test_case::test_case;

    pub(crate) fn package(bins: &[&str]) -> PackageRef {
        PackageRef {
            name: "app".to_owned(),
            manifest_path: PathBuf::from("/ws/app/Cargo.toml"),
            workspace_root: PathBuf::from("/ws"),
            target_directory: PathBuf::from("/ws/target"),
            bins: bins.iter().map(|b| b.to_string()).collect(),
        }
    }

    fn parse(text: &str, profile: &str) -> Result<LoadgateConfig, ConfigError> {
        parse_config_str(
            text,
            Path::new("loadgate.toml"),
            Some(package(&["app"])),
            profile,
        )
    }

    const WORKLOAD: &str = indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#};

    fn with_workload(text: &str) -> String {
        format!("{WORKLOAD}{text}")
    }

    // Each case is one mistake; exactly one problem must be reported, at the given place.
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-secs = 10
    "#}, 2, 1, "unknown key `sessions-per-secs` in `[workload]`", Some("did you mean `sessions-per-sec`?"); "unknown key with suggestion")]
    #[test_case("[ramps]\nhold = \"1s\"\n", 6, 2, "unknown key `ramps` in the top level", Some("did you mean `ramp`?"); "unknown section")]
    #[test_case("[ramp]\nhold = 5\n", 7, 8, "expected a duration like \"30s\", found integer 5", None; "duration given as integer")]
    #[test_case("[ramp]\nhold = \"5 parsecs\"\n", 7, 8, "unknown duration unit `parsecs` in `5 parsecs`", Some("use ns, us, ms, s, m or h"); "unknown duration unit")]
    #[test_case("[ramp]\nhold = \"0s\"\n", 7, 8, "`hold` must be longer than zero", None; "zero hold")]
    #[test_case("[target]\nport = 70000\n", 7, 8, "a port must be between 1 and 65535, found 70000", None; "port out of range")]
    #[test_case("[target]\nport = \"80\"\n", 7, 8, "expected an integer (a port), found string \"80\"", None; "port as string")]
    #[test_case("[target]\ncpus = 0\n", 7, 8, "`cpus` must be greater than 0, found 0", None; "zero cpus")]
    #[test_case("[target]\nmemory = \"lots\"\n", 7, 10, "`lots` is not a size", Some("write e.g. \"512MiB\""); "memory without number")]
    #[test_case("[target]\nmemory = \"1TB\"\n", 7, 10, "unknown size unit `TB` in `1TB`", Some("use B, KiB, MiB, GiB, KB, MB or GB"); "unknown size unit")]
    #[test_case("[slo]\nerror-rate = 2.0\n", 7, 14, "`error-rate` must be at most 100%, found 200%", Some("a bare number is a fraction: 0.01 means 1%"); "error rate above one")]
    #[test_case("[slo]\nerror-rate = true\n", 7, 14, "expected a percentage like \"1%\" or a fraction like 0.01, found boolean true", None; "error rate as boolean")]
    #[test_case("[target]\nbin = \"app\"\nimage = \"x:1\"\n", 8, 1, "`image` and `bin` both name the target", Some("give only one of `bin`, `image`, `dockerfile` or `url`"); "two target sources")]
    #[test_case("[target]\nbin = \"ap\"\n", 7, 7, "package `app` has no binary target `ap`", Some("did you mean `app`? its binaries are: `app`"); "unknown bin")]
    #[test_case("[target]\nurl = \"https://127.0.0.1\"\n", 7, 7, "\"https://127.0.0.1\" uses https, which loadgate does not speak", Some("load goes to a service on loopback over plain http"); "https url")]
    #[test_case("[target]\ncontext = \".\"\nimage = \"x:1\"\n", 7, 1, "`context` is only used with `dockerfile`", None; "context without dockerfile")]
    #[test_case("[target]\nenv = { A = 1 }\n", 7, 13, "expected a string (quote numbers and booleans), found integer 1", None; "env value not a string")]
    #[test_case("[target]\nready = { http = \"health\" }\n", 7, 18, "path \"health\" must start with `/`", None; "ready path without slash")]
    #[test_case("[ramp]\nsteps = [\"50%\", \"25%\"]\n", 7, 17, "ramp steps must increase", Some("list them from the lightest load to the heaviest"); "steps not increasing")]
    #[test_case("[ramp]\nsteps = []\n", 7, 9, "`steps` lists no steps", None; "no steps")]
    #[test_case("[ramp]\nrefine = -1\n", 7, 10, "`refine` must be between 0 and 20, found -1", None; "negative refine")]
    #[test_case("[soak]\nat = \"0%\"\n", 7, 6, "`soak.at` must be more than 0%", None; "soak at zero")]
    #[test_case("[gate]\nrss-slope = \"2MiB\"\n", 7, 13, "`2MiB` is not a rate", Some("write e.g. \"2MiB/min\""); "rss slope without time")]
    #[test_case("[generator]\nmax-in-flight = 0\n", 7, 17, "`max-in-flight` must be at least 1, found 0", None; "zero in flight")]
    #[test_case("[generator]\nconnections = 300\n", 7, 15, "`connections` must be between 0 and 256, found 300", None; "connections past the cap")]
    #[test_case("[profile.ci.target]\nbin = \"app\"\n", 7, 1, "`bin` cannot be set in a profile", Some("a profile changes how the target is measured, not which target; set it in the top-level `[target]`"); "bin in a profile")]
    #[test_case("[profile.ci.ramp]\nhodl = \"1s\"\n", 7, 1, "unknown key `hodl` in `[profile.ci.ramp]`", Some("did you mean `hold`?"); "unknown key in a profile")]
    #[test_case("[profile.ci]\nramps = {}\n", 7, 1, "unknown key `ramps` in `[profile.ci]`", Some("did you mean `ramp`?"); "unknown section in a profile")]
    #[test_case("[profile.mine]\ninherits = \"qiuck\"\n", 7, 12, "profile `mine` inherits from an unknown profile `qiuck`", Some("did you mean `quick`?"); "inherits unknown profile")]
    #[test_case("[profile.a]\ninherits = \"b\"\n[profile.b]\ninherits = \"a\"\n", 7, 12, "profile inheritance makes a cycle: a → b → a", Some("remove one of these `inherits`"); "inheritance cycle")]
    #[test_case("[profile.a]\ninherits = \"a\"\n", 7, 12, "profile inheritance makes a cycle: a → a", Some("remove one of these `inherits`"); "profile inherits itself")]
    #[test_case("[profile.quick.ramp]\nwarmup = \"3s\"\n", 7, 10, "in profile `quick`, `warmup` (3s) is not shorter than `hold` (2s)", Some("the warmup is excluded from each step's figures, so it must leave some of the hold to measure"); "warmup longer than a profile's hold")]
    fn one_problem_is_reported(
        extra: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        let text = if extra.contains("[workload]") {
            extra.to_owned() + &WORKLOAD[11..]
        } else {
            with_workload(extra)
        };
        let err = parse(&text, "default").expect_err("the config is invalid");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{text}\n{err}");
        let d = &diags[0];
        assert_eq!(
            (d.line, d.col, d.message.as_str(), d.help.as_deref()),
            (line, col, message, help),
            "{text}\n{err}"
        );
    }

    // Mistakes in the workload: the file is written in full.
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        [[workload.operation]]
        name = "home"
        request = { path = "/b" }
    "#}, 7, 8, "operation `home` is defined twice", Some("the first definition is on line 4; rename one of them"); "duplicate operation")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "hom", p = 0.5 }]
    "#}, 6, 16, "a transition of `home` names an unknown operation `hom`", Some("did you mean `home`?"); "unknown transition target")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        entry = "start"
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#}, 3, 9, "`entry` names an unknown operation `start`", Some("the operations are: `home`"); "unknown entry")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "a", p = 0.7 }, { to = "b", p = 0.5 }]
        [[workload.operation]]
        name = "a"
        request = { path = "/a" }
        [[workload.operation]]
        name = "b"
        request = { path = "/b" }
    "#}, 6, 8, "the transitions of `home` sum to 1.2, more than 1", Some("the probabilities of one operation's `next` must sum to at most 1; the rest ends the session"); "probabilities above one")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        [[workload.operation]]
        name = "orphan"
        request = { path = "/o" }
    "#}, 7, 8, "operation `orphan` is unreachable from the entry operations", Some("add a transition to it (`next`) or list it in `workload.entry`"); "unreachable operation")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 1.0 }]
    "#}, 6, 8, "sessions that reach `home` never end", Some("from here every transition's probabilities sum to 1 in a loop; lower one so sessions can leave"); "sessions never end")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/", headers = { Authorization = "Bearer {{token}}" } }
    "#}, 5, 53, "`{{token}}` is never captured on any path to `home`", Some("no operation captures it; capture it in an earlier operation, e.g. capture = { token = \"/token\" }"); "variable never captured")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        entry = [{ to = "home" }, { to = "login" }]
        [[workload.operation]]
        name = "home"
        request = { path = "/{{token}}" }
        [[workload.operation]]
        name = "login"
        request = { method = "POST", path = "/login" }
        capture = { token = "/token" }
        next = [{ to = "home", p = 0.5 }]
        [[workload.operation]]
        name = "later"
        request = { path = "/later" }
    "#}, 13, 8, "operation `later` is unreachable from the entry operations", Some("add a transition to it (`next`) or list it in `workload.entry`"); "a variable captured on some path is fine")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "next", p = 0.5 }]
        [[workload.operation]]
        name = "next"
        request = { path = "/n/{{sesion}}" }
    "#}, 9, 20, "`{{sesion}}` is never captured on any path to `next`", Some("did you mean `{{session}}`? no operation captures it; capture it in an earlier operation, e.g. capture = { sesion = \"/sesion\" }"); "misspelt built-in variable")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 0.5, think = { uniform = ["3s", "1s"] } }]
    "#}, 6, 53, "uniform think time has its low bound 3s above its high bound 1s", Some("write the shorter duration first"); "uniform think reversed")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        capture = { token = "token" }
    "#}, 6, 21, "JSON pointer \"token\" must start with `/` (or be empty for the whole body)", Some("write e.g. \"/token\" or \"/0/id\""); "capture pointer without slash")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        expect = { json-pointer = "/a~2" }
    "#}, 6, 27, "JSON pointer \"/a~2\" has a `~` that is not `~0` or `~1`", Some("write e.g. \"/token\" or \"/0/id\""); "bad escape in a pointer")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { method = "GTE", path = "/" }
    "#}, 5, 22, "unknown HTTP method `GTE`", Some("did you mean `GET`?"); "unknown method")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { method = "post", path = "/" }
    "#}, 5, 22, "unknown HTTP method `post`", Some("methods are case-sensitive; write `POST`"); "lowercase method")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/", json = {}, body = "x" }
    "#}, 5, 43, "`request` of operation `home` has both `json` and `body`", Some("keep one of them"); "json and body")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "home" }
    "#}, 5, 20, "path \"home\" must start with `/`", None; "path without slash")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/{{session" }
    "#}, 5, 20, "`{{` without a closing `}}` in \"/{{session\"", None; "unclosed placeholder")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        capture = { session = "/id" }
    "#}, 6, 13, "`session` is a built-in variable and cannot be captured", None; "capture of a built-in")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        expect = { status = [200, 999] }
    "#}, 6, 27, "a status code must be between 100 and 599, found 999", None; "status out of range")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
        next = [{ to = "home", p = 1.5 }]
    "#}, 6, 28, "a probability must be in (0, 1], found 1.5", None; "probability above one")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        reqest = { path = "/" }
    "#}, 5, 1, "unknown key `reqest` in operation `home`", Some("did you mean `request`?"); "typo in an operation key")]
    #[test_case(indoc! {r#"
        [workload]
        seed = 1
        [[workload.operation]]
        name = "home"
        request = { path = "/" }
    "#}, 1, 1, "`[workload]` has no `sessions-per-sec`", None; "missing rate")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
    "#}, 1, 1, "the workload has no operations", Some("add one, e.g.\n[[workload.operation]]\nname = \"home\"\nrequest = { path = \"/\" }"); "no operations")]
    #[test_case(indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" 
    "#}, 5, 23, "invalid TOML: unclosed inline table, expected `}`", None; "toml syntax error")]
    fn one_workload_problem_is_reported(
        text: &str,
        line: usize,
        col: usize,
        message: &str,
        help: Option<&str>,
    ) {
        let err = parse(text, "default").expect_err("the config is invalid");
        let diags = err.diagnostics();
        assert_eq!(diags.len(), 1, "{text}\n{err}");
        let d = &diags[0];
        assert_eq!(
            (d.line, d.col, d.message.as_str(), d.help.as_deref()),
            (line, col, message, help),
            "{text}\n{err}"
        );
    }

    #[test]
    fn every_problem_is_rendered_at_once() {
        let text = indoc! {r#"
            [target]
            bin = "app"
            port = 0
            memroy = "256MiB"

            [workload]
            sessions-per-secs = 20
            entry = "landing"

            [[workload.operation]]
            name = "landing"
            request = { method = "GTE", path = "/" }
            next = [{ to = "logn", p = 0.8, think = "1s" }]

            [[workload.operation]]
            name = "login"
            request = { method = "POST", path = "/login", headers = { Authorization = "Bearer {{token}}" } }

            [ramp]
            hold = 5
        "#};
        let err = parse(text, "default").expect_err("the config is invalid");
        let ConfigError::Invalid {
            diagnostics,
            sources,
        } = &err
        else {
            panic!("{err}")
        };
        insta::assert_snapshot!(crate::config::render_diagnostics(diagnostics, sources));
    }

    #[test]
    fn the_display_of_invalid_is_the_rendering() {
        let err = parse("[ramp]\nhold = 5\n", "default").expect_err("the config is invalid");
        let ConfigError::Invalid {
            diagnostics,
            sources,
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!(
            err.to_string(),
            crate::config::render_diagnostics(diagnostics, sources)
        );
    }

    #[test]
    fn metadata_spans_point_into_cargo_toml() {
        let text = indoc! {r#"
            [package]
            name = "app"
            version = "0.1.0"
            edition = "2024"

            [package.metadata.loadgate.target]
            bin = "app"
            prot = 8080

            [package.metadata.loadgate.workload]
            sessions-per-sec = -1
            [[package.metadata.loadgate.workload.operation]]
            name = "home"
            request = { path = "/" }

            [package.metadata.loadgate.profile.ci.ramp]
            hold = "4"

            [dependencies]
        "#};
        let err = validate(
            SourceFile::new(PathBuf::from("app/Cargo.toml"), text.to_owned()),
            Location::Metadata,
            Some(package(&["app"])),
            "default",
        )
        .expect_err("the config is invalid");
        let ConfigError::Invalid {
            diagnostics,
            sources,
        } = &err
        else {
            panic!("{err}")
        };
        insta::assert_snapshot!(crate::config::render_diagnostics(diagnostics, sources));
    }

    #[test]
    fn metadata_config_loads() {
        let text = "[package]\nname = \"app\"\n\n[package.metadata.loadgate]\nworkload = { sessions-per-sec = 5, operation = [{ name = \"home\", request = { path = \"/\" } }] }\n"
            .to_owned();
        let cfg = validate(
            SourceFile::new(PathBuf::from("app/Cargo.toml"), text),
            Location::Metadata,
            Some(package(&["app"])),
            "ci",
        )
        .expect("valid");
        assert_eq!(
            cfg.target.source,
            TargetSource::Bin {
                name: "app".to_owned()
            }
        );
        assert_eq!(cfg.workload.sessions_per_sec, 5.0);
        assert_eq!(cfg.ramp.hold, Duration::from_secs(4));
    }

    const LAYERED: &str = indoc! {r#"
        [workload]
        sessions-per-sec = 10
        [[workload.operation]]
        name = "home"
        request = { path = "/" }

        [ramp]
        hold = "3s"
        refine = 4

        [soak]
        window = "2s"

        [profile.quick.ramp]
        hold = "1s"

        [profile.mine]
        inherits = "quick"
        ramp = { hold = "1500ms" }
        soak = { at = "50%" }

        [profile.theirs]
        inherits = "mine"
        gate = { p99 = "20%" }
    "#};

    #[test]
    fn profiles_layer_user_over_builtin_over_top_level_over_defaults() {
        let default = parse(LAYERED, "default").unwrap();
        assert_eq!(default.ramp.hold, Duration::from_secs(3), "user top level");
        assert_eq!(default.ramp.refine, 4, "user top level");
        assert_eq!(
            default.ramp.warmup,
            Duration::from_secs(1),
            "built-in default"
        );
        assert_eq!(default.ramp.steps.len(), 6, "built-in default");

        let quick = parse(LAYERED, "quick").unwrap();
        assert_eq!(
            quick.ramp.hold,
            Duration::from_secs(1),
            "user [profile.quick]"
        );
        assert_eq!(
            quick.ramp.warmup,
            Duration::from_millis(500),
            "built-in [profile.quick]"
        );
        assert_eq!(
            quick.ramp.refine, 1,
            "built-in [profile.quick] beats the user's top level"
        );
        assert_eq!(quick.ramp.steps, vec![0.25, 0.5, 1.0]);
        assert_eq!(quick.soak.window, Duration::from_secs(2), "user top level");
        assert_eq!(quick.soak.at, 0.6, "built-in default");

        let mine = parse(LAYERED, "mine").unwrap();
        assert_eq!(
            mine.ramp.hold,
            Duration::from_millis(1500),
            "user [profile.mine]"
        );
        assert_eq!(
            mine.ramp.warmup,
            Duration::from_millis(500),
            "inherited from quick"
        );
        assert_eq!(
            mine.soak.duration,
            Duration::from_secs(5),
            "inherited from built-in quick"
        );
        assert_eq!(mine.soak.at, 0.5);

        let theirs = parse(LAYERED, "theirs").unwrap();
        assert_eq!(theirs.profile, "theirs");
        assert_eq!(theirs.gate.p99_change, 0.2);
        assert_eq!(
            theirs.ramp.hold,
            Duration::from_millis(1500),
            "two steps up the chain"
        );
        assert_eq!(theirs.gate.p50_change, 0.05, "built-in default");

        let full = parse(LAYERED, "full").unwrap();
        assert_eq!(
            (full.ramp.hold, full.ramp.refine),
            (Duration::from_secs(10), 3)
        );
        assert_eq!(full.soak.duration, Duration::from_secs(120));
    }

    #[test]
    fn an_unknown_profile_lists_the_available_ones() {
        let err = parse(LAYERED, "quik").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown profile `quik`\nhint: available profiles: default, quick, ci, full, mine, theirs"
        );
    }

    #[test]
    fn the_default_p99_applies_only_when_no_latency_limit_is_given() {
        let cfg = parse(WORKLOAD, "default").unwrap();
        assert_eq!(
            cfg.slo.latency,
            vec![LatencyLimit {
                quantile: 0.99,
                limit: Duration::from_millis(200)
            }]
        );
        let cfg = parse(
            &with_workload("[slo]\np50 = \"20ms\"\np999 = \"1s\"\n"),
            "default",
        )
        .unwrap();
        assert_eq!(
            cfg.slo.latency,
            vec![
                LatencyLimit {
                    quantile: 0.5,
                    limit: Duration::from_millis(20)
                },
                LatencyLimit {
                    quantile: 0.999,
                    limit: Duration::from_secs(1)
                },
            ]
        );
    }

    #[test]
    fn a_profile_url_replaces_the_target() {
        let text = with_workload(
            "[target]\nbin = \"app\"\n[profile.staging.target]\nurl = \"http://127.0.0.1:9000/\"\n",
        );
        assert_eq!(
            parse(&text, "default").unwrap().target.source,
            TargetSource::Bin {
                name: "app".to_owned()
            }
        );
        assert_eq!(
            parse(&text, "staging").unwrap().target.source,
            TargetSource::Url {
                url: "http://127.0.0.1:9000".to_owned()
            }
        );
    }

    #[test]
    fn the_target_defaults_to_the_only_bin_or_a_loopback_url() {
        let one = parse_config_str(
            WORKLOAD,
            Path::new("loadgate.toml"),
            Some(package(&["app"])),
            "default",
        )
        .unwrap();
        assert_eq!(
            one.target.source,
            TargetSource::Bin {
                name: "app".to_owned()
            }
        );
        let none = parse_config_str(WORKLOAD, Path::new("loadgate.toml"), None, "default").unwrap();
        assert_eq!(
            none.target.source,
            TargetSource::Url {
                url: "http://127.0.0.1:8080".to_owned()
            }
        );
        let two = Some(package(&["app", "app-admin"]));
        let err =
            parse_config_str(WORKLOAD, Path::new("loadgate.toml"), two, "default").unwrap_err();
        assert_eq!(
            err.diagnostics()[0].message,
            "no target: package `app` has several binaries (app, app-admin)"
        );
    }

    #[test]
    fn a_dockerfile_resolves_against_the_config_directory() {
        let text = with_workload("[target]\ndockerfile = \"docker/Dockerfile\"\ncontext = \".\"\n");
        let cfg =
            parse_config_str(&text, Path::new("/ws/app/loadgate.toml"), None, "default").unwrap();
        assert_eq!(
            cfg.target.source,
            TargetSource::Dockerfile {
                path: PathBuf::from("/ws/app/docker/Dockerfile"),
                context: PathBuf::from("/ws/app/.")
            }
        );
    }

    #[test]
    fn a_full_operation_is_read_in_every_part() {
        let text = indoc! {r#"
            [workload]
            sessions-per-sec = 2.5
            entry = [{ to = "a", weight = 3 }, { to = "b", weight = 1 }]
            [[workload.operation]]
            name = "a"
            request = { method = "POST", path = "/a/{{session}}", headers = { X-B = "2", X-A = "1" }, json = { n = 1, s = "{{seq}}", l = [true, 1.5] } }
            expect = { status = [200, 201], body-contains = "ok", json-pointer = "/id", json-equals = { "/status" = "booked" } }
            capture = { id = "/id" }
            next = [{ to = "b", p = 0.5, think = "1s" }, { to = "a", p = 0.25, think = { fixed = "2s" } }]
            [[workload.operation]]
            name = "b"
            request = { path = "/b/{{id}}", body = "raw {{session}}" }
            next = [{ to = "a", p = 1, think = { uniform = ["1s", "3s"] } }]
        "#};
        let cfg = parse_config_str(text, Path::new("loadgate.toml"), None, "default").unwrap();
        let w = &cfg.workload;
        assert_eq!(
            w.entry,
            vec![
                EntryPoint {
                    operation: 0,
                    p: 0.75
                },
                EntryPoint {
                    operation: 1,
                    p: 0.25
                }
            ]
        );
        let a = &w.operations[0];
        assert_eq!(
            a.request.headers,
            vec![
                ("X-B".to_owned(), "2".to_owned()),
                ("X-A".to_owned(), "1".to_owned())
            ]
        );
        assert_eq!(
            a.request.body,
            Some(BodyTemplate::Json(
                serde_json::json!({ "n": 1, "s": "{{seq}}", "l": [true, 1.5] })
            ))
        );
        assert_eq!(a.expect.status, vec![200, 201]);
        assert_eq!(
            a.expect.json_equals,
            vec![("/status".to_owned(), serde_json::json!("booked"))]
        );
        assert_eq!(
            a.capture,
            vec![Capture {
                variable: "id".to_owned(),
                pointer: "/id".to_owned()
            }]
        );
        assert_eq!(
            a.next,
            vec![
                Transition {
                    to: 1,
                    p: 0.5,
                    think: ThinkTime::Exponential(Duration::from_secs(1))
                },
                Transition {
                    to: 0,
                    p: 0.25,
                    think: ThinkTime::Fixed(Duration::from_secs(2))
                },
            ]
        );
        let b = &w.operations[1];
        assert_eq!(b.request.method, "GET");
        assert_eq!(
            b.request.body,
            Some(BodyTemplate::Raw("raw {{session}}".to_owned()))
        );
        assert_eq!(
            b.next[0].think,
            ThinkTime::Uniform(Duration::from_secs(1), Duration::from_secs(3))
        );
    }

    #[test]
    fn the_built_in_defaults_are_valid_for_every_profile() {
        for profile in BUILTIN_PROFILES {
            let cfg =
                parse_config_str(WORKLOAD, Path::new("loadgate.toml"), None, profile).unwrap();
            assert_eq!(cfg.profile, *profile);
        }
    }

    fn demo_package() -> PackageRef {
        PackageRef {
            name: "demo-service".to_owned(),
            ..package(&["demo-service"])
        }
    }

    fn demo_config() -> String {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/demo-service/loadgate.toml");
        std::fs::read_to_string(path).expect("the demo's loadgate.toml is readable")
    }

    #[test_case("default")]
    #[test_case("quick")]
    #[test_case("ci")]
    #[test_case("full")]
    fn the_demo_config_loads_for_every_built_in_profile(profile: &str) {
        let demo = demo_package();
        let cfg = parse_config_str(
            &demo_config(),
            Path::new("fixtures/demo-service/loadgate.toml"),
            Some(demo),
            profile,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            cfg.target.source,
            TargetSource::Bin {
                name: "demo-service".to_owned()
            }
        );
        assert_eq!(cfg.target.memory_bytes, Some(256 * 1024 * 1024));
        let per_session =
            model::expected_requests_per_session(&cfg.workload.entry, &cfg.workload.operations);
        let rate = per_session * cfg.workload.sessions_per_sec;
        assert!(
            (180.0..=220.0).contains(&rate),
            "the demo's rate at 100% is {rate} requests/s"
        );
    }

    #[test]
    fn the_demo_override_example_works_when_uncommented() {
        let demo = demo_config();
        let start = demo
            .find("# [profile.ci.soak]")
            .expect("the example is in the demo config");
        let example: String = demo[start..]
            .lines()
            .map(|l| format!("{}\n", l.trim_start_matches("# ")))
            .collect();
        let text = format!("{}{example}", &demo[..start]);
        let path = Path::new("loadgate.toml");
        let ci = parse_config_str(&text, path, Some(demo_package()), "ci")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ci.soak.duration, Duration::from_secs(30));
        assert_eq!(ci.ramp.hold, Duration::from_secs(4));
        let nightly = parse_config_str(&text, path, Some(demo_package()), "nightly").unwrap();
        assert_eq!(nightly.ramp.steps, vec![0.25, 0.5, 1.0, 1.5, 2.0]);
        assert_eq!(
            nightly.ramp.hold,
            Duration::from_secs(10),
            "inherited from full"
        );
    }

    /// Never panic on user input: every damaged variant of the demo config is answered with a
    /// config or with problems that all point inside the file.
    #[test]
    fn damaged_configs_are_reported_not_panicked_on() {
        let demo = demo_config();
        let lines: Vec<&str> = demo.lines().collect();
        let mut variants: Vec<String> = (0..lines.len())
            .map(|skip| {
                lines
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != skip)
                    .map(|(_, l)| format!("{l}\n"))
                    .collect()
            })
            .collect();
        variants.extend(
            (0..demo.len())
                .step_by(13)
                .filter(|&i| demo.is_char_boundary(i))
                .map(|i| demo[..i].to_owned()),
        );
        for text in &variants {
            if let Err(err) = parse_config_str(
                text,
                Path::new("loadgate.toml"),
                Some(demo_package()),
                "quick",
            ) {
                let line_count = text.lines().count().max(1);
                for d in err.diagnostics() {
                    assert!(d.line >= 1 && d.line <= line_count + 1, "{d} in\n{text}");
                }
                let _ = err.to_string();
            }
        }
    }

    #[test]
    fn the_demo_config_resolves_to_this_listing() {
        let demo = demo_package();
        let cfg = parse_config_str(
            &demo_config(),
            Path::new("fixtures/demo-service/loadgate.toml"),
            Some(demo),
            "quick",
        )
        .unwrap();
        insta::assert_snapshot!(crate::config::render_resolved(&cfg));
    }

    /// The config hash of every stored baseline is taken over this serialized form, so a
    /// refactoring of `config/` must leave it byte for byte as it was: the demo config and the
    /// built-in defaults, in every built-in profile, pinned by the sha256 of their JSON.
    #[test]
    fn the_serialized_config_does_not_change() {
        let demo = demo_config();
        let demo_path = Path::new("fixtures/demo-service/loadgate.toml");
        let hash = |cfg: &LoadgateConfig| {
            let json = serde_json::to_value(cfg).expect("the config serializes");
            crate::result::hex_sha256(json.to_string().as_bytes())
        };
        let mut got = Vec::new();
        for profile in BUILTIN_PROFILES {
            let cfg = parse_config_str(&demo, demo_path, Some(demo_package()), profile).unwrap();
            got.push(format!("demo {profile} {}", hash(&cfg)));
        }
        for profile in BUILTIN_PROFILES {
            let cfg =
                parse_config_str(WORKLOAD, Path::new("loadgate.toml"), None, profile).unwrap();
            got.push(format!("defaults {profile} {}", hash(&cfg)));
        }
        assert_eq!(got, PINNED_SERIALIZED_CONFIG, "{}", got.join("\n"));
    }

    const PINNED_SERIALIZED_CONFIG: &[&str] = &[
        "demo default 1eac79e59f153c67cd5a2da3dd6d663e4c7e4839771df90901eac4dcc5ae2ebf",
        "demo quick ae801f860132285b4837474c54f5c462814416d36006a0470dd85e293c75e503",
        "demo ci f23182b56f71cce22da94ebe18df71da1608eec9b11aa60a7e8d749aae308a26",
        "demo full 585aab259e4228e226c7a3878dc832bb93e0823d8cceca9cd35ef013aa09c2f0",
        "defaults default 3ca1883482a715aa598ecdfccf45ec7adafe02b2f752092a2884f7b64691b359",
        "defaults quick b8c3c122c4c48cc36435f19a3c2d0993a8a5bceb5cf4f291c17548140bb65dfa",
        "defaults ci af3cc5e92d0ba38eb0b1457e9c4b8ff54f11934e74e9adb03f0b0e509fc467c8",
        "defaults full dd8d871081ee74fb6a55362693c0a2ea10b2790d826cfab04205cf2c5ba06bce",
    ];

    #[test]
    fn the_resolved_listing_reads_back_as_the_same_config() {
        let demo = demo_package();
        let path = Path::new("fixtures/demo-service/loadgate.toml");
        for profile in BUILTIN_PROFILES {
            let cfg = parse_config_str(&demo_config(), path, Some(demo.clone()), profile).unwrap();
            let listing = crate::config::render_resolved(&cfg);
            let again = parse_config_str(&listing, path, Some(demo.clone()), "default")
                .unwrap_or_else(|e| panic!("{listing}\n{e}"));
            assert_eq!(
                LoadgateConfig {
                    profile: profile.to_string(),
                    ..again
                },
                cfg
            );
        }
    }
}
