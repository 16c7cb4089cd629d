//! `[target]`: what to run and how to tell it is ready. Which service is tested is fixed at the
//! top level; a profile may only point at a running one (`url`) or change how it is run.

use super::key::{Key, Section, SubTable, one_of};
use super::profile::Look;
use crate::config::source::{
    Cx, Tbl, Val, array, integer_in, keyword, positive_duration, positive_number, size, string,
    string_map, suggest,
};
use crate::config::types::{NetworkChoice, PackageRef, ReadyConfig, TargetConfig, TargetSource};
use std::{collections::BTreeMap, path::Path, time::Duration};

/// `target.bin`.
pub(crate) const BIN: Key<String> = Key::fixed(
    "bin",
    "a binary target of the package, built by loadgate",
    non_empty,
);
/// `target.image`.
pub(crate) const IMAGE: Key<String> = Key::fixed(
    "image",
    "a `name:tag` that exists in the local Docker engine (never pulled)",
    non_empty,
);
/// `target.dockerfile`.
pub(crate) const DOCKERFILE: Key<String> = Key::fixed(
    "dockerfile",
    "a Dockerfile, relative to the config file's directory",
    non_empty,
);
/// `target.context`.
pub(crate) const CONTEXT: Key<String> =
    Key::fixed("context", "the build context of `dockerfile`", non_empty);
/// `target.url`.
pub(crate) const URL: Key<String> = Key::new(
    "url",
    "a running service, `http://…` (only loopback unless `--allow-remote`)",
    |cx, v, _| url(cx, v),
);
/// `target.port`.
pub(crate) const PORT: Key<u16> = Key::new(
    "port",
    "the port the service listens on inside a container whose port is published; it is given as \
     `$PORT` (on the host's network the service gets a free port as `$PORT` instead)",
    |cx, v, _| integer_in(cx, v, "a port", 1..=65535).map(|p| p as u16),
);
/// `target.ready.http`.
pub(crate) const READY_HTTP: Key<String> =
    Key::new("http", "the path polled", |cx, v, _| ready_path(cx, v));
/// `target.ready.timeout`.
pub(crate) const READY_TIMEOUT: Key<Duration> =
    Key::qualified("timeout", "how long to wait", positive_duration);
/// `target.ready.interval`.
pub(crate) const READY_INTERVAL: Key<Duration> =
    Key::qualified("interval", "the pause between polls", positive_duration);
/// `target.ready`.
pub(crate) const READY: SubTable = SubTable {
    name: "ready",
    doc: "ready when `GET http` answers 2xx; each key defaults separately",
    expected: "a table like { http = \"/health\" }",
    keys: &[&READY_HTTP, &READY_TIMEOUT, &READY_INTERVAL],
};
/// `target.cpus`.
pub(crate) const CPUS: Key<f64> = Key::new(
    "cpus",
    "CPU limit of the container, in cores",
    positive_number,
);
/// `target.memory`.
pub(crate) const MEMORY: Key<u64> =
    Key::new("memory", "memory limit of the container", |cx, v, _| {
        size(cx, v)
    });
/// `target.env`.
pub(crate) const ENV: Key<BTreeMap<String, String>> =
    Key::new("env", "environment of the service", env_map);
/// `target.network`.
pub(crate) const NETWORK: Key<NetworkChoice> = Key::new(
    "network",
    "how the load reaches a container: `host` (host networking, no proxy), `published` (a port \
     published on 127.0.0.1) or `auto` (host where the engine allows it)",
    network,
);
/// `target.replicas`.
pub(crate) const REPLICAS: Key<u32> = Key::new(
    "replicas",
    "instances of the service booted with identical limits, each on its own port; sessions stick to one and fail over as `generator.failover` says",
    |cx, v, what| integer_in(cx, v, what, 1..=MAX_REPLICAS).map(|n| n as u32),
);
/// The most replicas a target may have.
pub(crate) const MAX_REPLICAS: i64 = 16;
/// `target.args`.
pub(crate) const ARGS: Key<Vec<String>> = Key::new("args", "arguments of the service", strings);

/// The keys that name the target; at most one may be given.
const SOURCES: [&Key<String>; 4] = [&BIN, &IMAGE, &DOCKERFILE, &URL];

/// `[target]`.
pub(crate) const SECTION: Section = Section {
    name: "target",
    keys: &[
        &BIN,
        &IMAGE,
        &DOCKERFILE,
        &CONTEXT,
        &URL,
        &PORT,
        &READY,
        &CPUS,
        &MEMORY,
        &ENV,
        &ARGS,
        &NETWORK,
        &REPLICAS,
    ],
    check_table: Some(check_sources),
};

/// Pass 1, at the top level: one source at most, and `context` only with `dockerfile`.
fn check_sources(cx: &Cx<'_>, t: &Tbl<'_>, in_profile: bool) {
    if in_profile {
        return;
    }
    let given: Vec<&str> = SOURCES
        .iter()
        .map(|k| k.name)
        .filter(|k| t.get(k).is_some())
        .collect();
    for extra in given.iter().skip(1) {
        let span = t.key_span(extra).unwrap_or_else(|| t.span.clone());
        cx.error(
            t.file,
            span,
            format!("`{extra}` and `{}` both name the target", given[0]),
            Some(format!("give only one of {}", one_of(&SOURCES))),
        );
    }
    if let Some(span) = t.key_span(CONTEXT.name)
        && t.get(DOCKERFILE.name).is_none()
    {
        cx.error(
            t.file,
            span,
            format!(
                "{} is only used with {}",
                CONTEXT.what(SECTION.name),
                DOCKERFILE.what(SECTION.name)
            ),
            None,
        );
    }
}

/// An environment: a table of strings (`[target] env`, a dependency's `env`).
pub(crate) fn env_map(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<BTreeMap<String, String>> {
    Some(
        string_map(cx, v, what.to_owned())?
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect(),
    )
}

/// A string that is not blank.
pub(crate) fn non_empty(cx: &Cx<'_>, v: Val<'_>, what: &str) -> Option<String> {
    let s = string(cx, v, "a string")?;
    if s.trim().is_empty() {
        cx.error(v.file, v.span(), format!("{what} must not be empty"), None);
        return None;
    }
    Some(s.to_owned())
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

/// A path polled for readiness: it starts with `/`.
pub(crate) fn ready_path(cx: &Cx<'_>, v: Val<'_>) -> Option<String> {
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

fn network(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<NetworkChoice> {
    let networks = [
        NetworkChoice::Auto,
        NetworkChoice::Host,
        NetworkChoice::Published,
    ];
    let choices = networks.map(|n| (n.as_str(), n));
    keyword(cx, v, &choices, "unknown network", "`target.network`")
}

/// An array of strings (`args`), reporting every item that is not one.
pub(crate) fn strings(cx: &Cx<'_>, v: Val<'_>, _what: &str) -> Option<Vec<String>> {
    let items = array(cx, v, "an array of strings")?;
    let mut out = Vec::new();
    let mut ok = true;
    for item in items {
        match string(cx, item, "a string") {
            Some(s) => out.push(s.to_owned()),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Pass 2: `[target]` of one profile.
pub(crate) fn build(
    cx: &Cx<'_>,
    look: &Look<'_>,
    package: Option<&PackageRef>,
) -> Option<TargetConfig> {
    let s = &SECTION;
    let port = look.need(cx, s, &PORT);
    // Each key of `ready` is looked up through the layers on its own.
    fn ready_key<T>(cx: &Cx<'_>, look: &Look<'_>, key: &Key<T>) -> Option<T> {
        look.get(&[SECTION.name, READY.name, key.name])
            .and_then(|v| key.read(cx, v, READY.name))
    }
    let ready = (|| {
        Some(ReadyConfig {
            path: ready_key(cx, look, &READY_HTTP)?,
            timeout: ready_key(cx, look, &READY_TIMEOUT)?,
            interval: ready_key(cx, look, &READY_INTERVAL)?,
        })
    })();
    let cpus = look.read(cx, s, &CPUS);
    let memory = look.read(cx, s, &MEMORY);
    let env = look.read(cx, s, &ENV).unwrap_or(Some(BTreeMap::new()));
    let args = look.read(cx, s, &ARGS).unwrap_or(Some(Vec::new()));
    let network = look
        .read(cx, s, &NETWORK)
        .unwrap_or(Some(NetworkChoice::Auto));
    let replicas = look.read(cx, s, &REPLICAS).unwrap_or(Some(1));
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
        network: network?,
        replicas: replicas?,
    })
}

fn target_source(
    cx: &Cx<'_>,
    look: &Look<'_>,
    package: Option<&PackageRef>,
    port: Option<u16>,
) -> Option<TargetSource> {
    let s = SECTION.name;
    // A profile may point at a running service instead; otherwise the top level says what to run.
    if let Some(v) = look.get_where(&[s, URL.name], |l| l.profile) {
        return URL.read(cx, v, s).map(|url| TargetSource::Url { url });
    }
    let top = |key: &Key<String>| {
        look.get_where(&[s, key.name], |l| !l.profile && !l.defaults)
            .map(|v| (v, key.read(cx, v, s)))
    };
    if let Some((v, name)) = top(&BIN) {
        let name = name?;
        if let Some(package) = package
            && !package.bins.contains(&name)
        {
            let help = if package.bins.is_empty() {
                format!(
                    "it has no binary targets; use {} instead",
                    one_of(&SOURCES[1..])
                )
            } else {
                let list = package
                    .bins
                    .iter()
                    .map(|b| format!("`{b}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                match suggest(&name, package.bins.iter().map(String::as_str)) {
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
        return Some(TargetSource::Bin { name });
    }
    if let Some((_, reference)) = top(&IMAGE) {
        return reference.map(|reference| TargetSource::Image { reference });
    }
    let base = cx.files[0]
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let Some((_, path)) = top(&DOCKERFILE) {
        let path = base.join(path?);
        let context = match top(&CONTEXT) {
            Some((_, c)) => base.join(c?),
            None => path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        return Some(TargetSource::Dockerfile { path, context });
    }
    if let Some((_, url)) = top(&URL) {
        return url.map(|url| TargetSource::Url { url });
    }
    match package {
        Some(p) if p.bins.len() == 1 => Some(TargetSource::Bin {
            name: p.bins[0].clone(),
        }),
        Some(p) => {
            let (file, span) = look.section_anchor(s);
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
                    "set one of {} in `[{}{s}]`",
                    one_of(&SOURCES),
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

#[cfg(test)]
mod tests {
    use crate::config::parse_config_str;
    use crate::config::types::*;
    use crate::config::validate::testing::{WORKLOAD, one_problem, package, parse, with_workload};
    use std::path::{Path, PathBuf};
    use test_case::test_case;

    // Each case is one mistake in `[target]`; exactly one problem must be reported, at the given place.
    #[test_case("[target]\nport = 70000\n", 7, 8, "a port must be between 1 and 65535, found 70000", None; "port out of range")]
    #[test_case("[target]\nport = \"80\"\n", 7, 8, "expected an integer (a port), found string \"80\"", None; "port as string")]
    #[test_case("[target]\ncpus = 0\n", 7, 8, "`cpus` must be greater than 0, found 0", None; "zero cpus")]
    #[test_case("[target]\nmemory = \"lots\"\n", 7, 10, "`lots` is not a size", Some("write e.g. \"512MiB\""); "memory without number")]
    #[test_case("[target]\nmemory = \"1TB\"\n", 7, 10, "unknown size unit `TB` in `1TB`", Some("use B, KiB, MiB, GiB, KB, MB or GB"); "unknown size unit")]
    #[test_case("[target]\nbin = \"app\"\nimage = \"x:1\"\n", 8, 1, "`image` and `bin` both name the target", Some("give only one of `bin`, `image`, `dockerfile` or `url`"); "two target sources")]
    #[test_case("[target]\nbin = \"ap\"\n", 7, 7, "package `app` has no binary target `ap`", Some("did you mean `app`? its binaries are: `app`"); "unknown bin")]
    #[test_case("[target]\nurl = \"https://127.0.0.1\"\n", 7, 7, "\"https://127.0.0.1\" uses https, which loadgate does not speak", Some("load goes to a service on loopback over plain http"); "https url")]
    #[test_case("[target]\ncontext = \".\"\nimage = \"x:1\"\n", 7, 1, "`context` is only used with `dockerfile`", None; "context without dockerfile")]
    #[test_case("[target]\nenv = { A = 1 }\n", 7, 13, "expected a string (quote numbers and booleans), found integer 1", None; "env value not a string")]
    #[test_case("[target]\nready = { http = \"health\" }\n", 7, 18, "path \"health\" must start with `/`", None; "ready path without slash")]
    #[test_case("[target]\nnetwork = \"hots\"\n", 7, 11, "unknown network `hots` in `target.network`", Some("did you mean `host`?"); "unknown network")]
    #[test_case("[target]\nnetwork = true\n", 7, 11, "expected one of \"auto\", \"host\", \"published\", found boolean true", None; "network not a string")]
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
}
